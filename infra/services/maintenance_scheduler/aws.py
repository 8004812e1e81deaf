"""The maintenance schedule on aws: EventBridge Scheduler starts one ECS task per maintenance job (orchestration).

Each ``maintenance`` job of the spec is a schedule in the layer's schedule group that starts one task on the
compute cluster. The task is the Trino CLI (from the pinned Trino image) running the job's Iceberg procedure on
every table of the default catalog, through the Trino coordinator: maintenance is scheduled by the platform,
not by whoever wrote the pipeline. Failed invocations go to a KMS-encrypted dead-letter queue, watched by an
alarm. The statements are the native scheduler's (``infra.operations.maintenance``), with the job's threshold
as the session's minimum retention; a job of scope ``declared`` runs on the declared tables that list its
action, a job of scope ``all`` on every table except declared ones that do not.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from infra.operations import maintenance
from infra.services.context import Side, url
from infra.spec import Layer, MaintenanceJob, PlatformSpec, eventbridge_cron
from infra.targets.aws import governance as gov_module
from infra.targets.aws.alarms import Alarm
from infra.targets.aws.context import AwsComponent
from infra.targets.aws.ecs import Container, shell, task_definition
from infra.targets.aws.foundation import Foundation
from infra.targets.aws.tables import catalog_name

LAYER = Layer.ORCHESTRATION
MAINTENANCE = "maintenance"
TRINO = "trino"


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {MAINTENANCE: None}


def enabled(spec: PlatformSpec) -> bool:
    """Maintenance runs on aws when the stack schedules any (the model refuses that without Trino)."""
    return bool(spec.maintenance)


def maintenance_script(server: str, catalog: str) -> list[str]:
    """Runs $MAINTENANCE_ACTION on its tables of the catalog through the Trino coordinator; fails loudly.

    $SCOPE is ``declared`` (only the tables in $ONLY_TABLES) or ``all`` (every table but those in
    $SKIP_TABLES); both lists are comma-separated ``schema.table``. The threshold $OLDER_THAN_DAYS is
    also the session's minimum retention (Trino refuses thresholds under its 7-day default otherwise).
    """
    cases = []
    for action in maintenance.ACTIONS:
        threshold = maintenance.DAY_S if action in maintenance.MIN_RETENTION_PROPERTY else None
        sql, session = maintenance.statement(action, "CATALOG", "SCHEMA.NAME", threshold)
        sql = sql.replace('"CATALOG"."SCHEMA"."NAME"', "$table").replace("'1d'", "'${OLDER_THAN_DAYS}d'")
        setting = "".join(f'; session="$catalog.{key.split(".", 1)[1]}=${{OLDER_THAN_DAYS}}d"' for key in session)
        cases.append(f'    {action}) sql="{sql}"{setting} ;;')
    return [
        "set -eu",
        f"server={server}",
        f"catalog={catalog}",
        'run() { trino --server "$server" --user platform-maintenance --output-format TSV "$@"; }',
        "tables=$(run --execute \"SELECT table_schema, table_name FROM $catalog.information_schema.tables "
        "WHERE table_schema <> 'information_schema' AND table_type = 'BASE TABLE'\")",
        'printf "%s\\n" "$tables" | while IFS="$(printf "\\t")" read -r schema name; do',
        '  [ -n "$name" ] || continue',
        '  if [ "${SCOPE:-all}" = declared ]; then',
        '    case ",${ONLY_TABLES:-}," in *",$schema.$name,"*) ;; *) continue ;; esac',
        "  fi",
        '  case ",${SKIP_TABLES:-}," in *",$schema.$name,"*) continue ;; esac',
        '  table="$catalog.\\"$schema\\".\\"$name\\""',
        '  session=""',
        '  case "$MAINTENANCE_ACTION" in',
        *cases,
        '    *) echo "unknown maintenance action $MAINTENANCE_ACTION" >&2; exit 2 ;;',
        "  esac",
        '  echo "$MAINTENANCE_ACTION $table"',
        '  if [ -n "$session" ]; then run --session "$session" --execute "$sql"; else run --execute "$sql"; fi',
        "done",
    ]


def job_tables(spec: PlatformSpec, job: MaintenanceJob) -> dict[str, str]:
    """The task's table filter for one job: the declared tables it runs on (declared) or skips (all)."""
    listing = [t.identifier for t in spec.tables if job.action in t.maintenance]
    if job.scope == "declared":
        return {"SCOPE": "declared", "ONLY_TABLES": ",".join(listing)}
    return {"SCOPE": "all", "SKIP_TABLES": ",".join(t.identifier for t in spec.tables
                                                    if job.action not in t.maintenance)}


class MaintenanceSchedules(AwsComponent):
    """One EventBridge schedule per maintenance job, each starting the maintenance task on the compute cluster."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:MaintenanceSchedules", f"{spec.name}-{MAINTENANCE}", ctx, LAYER)
        opts = self.child_opts()
        tags = ctx.tags(LAYER)
        self.cluster = foundation.cluster(Layer.COMPUTE)
        entry_point, command = shell(maintenance_script(url(spec, TRINO, "http", Side.INTERNAL), catalog_name(spec)))
        container = Container(name=MAINTENANCE, image=spec.services[TRINO].image, memory_mib=1024,
                              entry_point=entry_point, command=command,
                              env={"MAINTENANCE_ACTION": "expire_snapshots", "OLDER_THAN_DAYS": "7"})
        execution = gov_module.execution_role(ctx, gov, MAINTENANCE, [MAINTENANCE], [])
        self.task = task_definition(ctx, LAYER, f"{spec.name}-{MAINTENANCE}", [container], tags=tags,
                                    execution_role=execution, task_role=None, secret_refs={}, cpu=512, memory=1024,
                                    opts=opts)
        self.dead_letter_queue = aws.sqs.Queue(
            f"{spec.name}-maintenance-dlq", name=f"{spec.name}-{pulumi.get_stack()}-maintenance-dlq",
            kms_master_key_id=gov.key.arn, kms_data_key_reuse_period_seconds=3600,
            message_retention_seconds=14 * 24 * 3600, tags=tags, opts=opts,
        )
        family = self.task.family
        self.role = gov_module.service_role(
            ctx, gov, "maintenance-scheduler", "scheduler.amazonaws.com",
            "EventBridge Scheduler: starts the platform's maintenance task, nothing else",
            [
                {"Sid": "RunMaintenanceTask", "Effect": "Allow", "Action": "ecs:RunTask",
                 "Resource": gov.arn("ecs", family.apply(lambda f: f"task-definition/{f}:*")),
                 "Condition": {"ArnLike": {"ecs:cluster": self.cluster.arn}}},
                {"Sid": "TagTheTask", "Effect": "Allow", "Action": "ecs:TagResource", "Resource": "*",
                 "Condition": {"StringEquals": {"ecs:CreateAction": "RunTask"}}},
                {"Sid": "PassTaskRoles", "Effect": "Allow", "Action": "iam:PassRole", "Resource": [execution.arn],
                 "Condition": {"StringLike": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}},
                {"Sid": "DeadLetters", "Effect": "Allow", "Action": "sqs:SendMessage",
                 "Resource": self.dead_letter_queue.arn},
                {"Sid": "EncryptDeadLetters", "Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                 "Resource": gov.key.arn},
            ],
            layer=LAYER,
        )
        self.group = aws.scheduler.ScheduleGroup(f"{spec.name}-maintenance",
                                                 name=f"{spec.name}-{pulumi.get_stack()}-maintenance",
                                                 tags=tags, opts=opts)
        self.schedules = [self._schedule(foundation, index, job) for index, job in enumerate(spec.maintenance)]
        self.described = [{"action": job.action, "cron": job.schedule, "expression": eventbridge_cron(job.schedule)}
                          for job in spec.maintenance]
        self.register_outputs({"schedule_group": self.group.name})

    def _schedule(self, foundation: Foundation, index: int, job: MaintenanceJob) -> aws.scheduler.Schedule:
        ctx, spec = foundation.ctx, foundation.spec
        network = foundation.gov.network
        overrides = {"containerOverrides": [{"name": MAINTENANCE, "environment": [
            {"name": "MAINTENANCE_ACTION", "value": job.action},
            {"name": "OLDER_THAN_DAYS", "value": str(job.older_than_days)},
            *({"name": key, "value": value} for key, value in job_tables(spec, job).items()),
        ]}]}
        return aws.scheduler.Schedule(
            f"{spec.name}-maintenance-{index}-{job.action.replace('_', '-')}",
            name=f"{index}-{job.action.replace('_', '-')}",
            group_name=self.group.name,
            description=f"{job.action} on every table of the {spec.catalog.default} catalog at {job.schedule} (UTC)",
            schedule_expression=eventbridge_cron(job.schedule),
            schedule_expression_timezone="UTC",
            flexible_time_window={"mode": "OFF"},
            state="ENABLED",
            target={
                "arn": self.cluster.arn,
                "role_arn": self.role.arn,
                "input": json.dumps(overrides),
                "ecs_parameters": {
                    "task_definition_arn": self.task.arn,
                    "launch_type": "FARGATE",
                    "platform_version": "LATEST",
                    "task_count": 1,
                    "network_configuration": {"subnets": network.private_subnet_ids,
                                              "security_groups": [network.sg("engines").id],
                                              "assign_public_ip": False},
                    "enable_ecs_managed_tags": True,
                    "propagate_tags": "TASK_DEFINITION",
                    "tags": ctx.tags(LAYER, **{"lakehouse.maintenance": job.action}),
                },
                "retry_policy": {"maximum_retry_attempts": 2, "maximum_event_age_in_seconds": 3600},
                "dead_letter_config": {"arn": self.dead_letter_queue.arn},
            },
            opts=self.child_opts(),
        )

    def layer_outputs(self) -> dict[str, Any]:
        return {"schedule_group": self.group.name, "schedules": self.described,
                "dead_letter_queue": self.dead_letter_queue.arn}

    def stack_outputs(self) -> dict[str, Any]:
        return {"maintenance_schedule_group": self.group.name}

    def watch(self, alarm: Alarm) -> None:
        """Maintenance invocations that could not start: tables stop being maintained."""
        alarm("maintenance-failed", "a maintenance run could not be started; tables stop being maintained",
              namespace="AWS/SQS", metric_name="ApproximateNumberOfMessagesVisible",
              dimensions={"QueueName": self.dead_letter_queue.name}, statistic="Maximum", period=300,
              evaluation_periods=1, threshold=0, comparison_operator="GreaterThanThreshold",
              treat_missing_data="notBreaching")


def build(foundation: Foundation) -> MaintenanceSchedules:
    return MaintenanceSchedules(foundation)
