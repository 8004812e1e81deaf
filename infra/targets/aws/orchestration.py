"""Orchestration on AWS: the platform's maintenance schedule, run by EventBridge Scheduler.

Each ``maintenance`` job of the spec is a schedule in the orchestration layer's schedule group that
starts one ECS task on the compute cluster. The task is the Trino CLI (from the pinned Trino image)
running the job's Iceberg procedure on every table of the default catalog, through the Trino
coordinator: maintenance is scheduled by the platform, not by whoever wrote the pipeline.
Failed invocations go to a KMS-encrypted dead-letter queue the observability layer watches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.services import registry, trino
from infra.services.base import Side, url
from infra.spec import Layer, MaintenanceJob, PlatformSpec, eventbridge_cron
from infra.targets.aws import governance as gov_module
from infra.targets.aws.ecs import Container, shell, task_definition

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.compute import ComputeState
    from infra.targets.aws.observability import LogGroups

LAYER = Layer.ORCHESTRATION
MAINTENANCE = "maintenance"

# Iceberg maintenance as Trino statements; {table} is catalog-qualified and quoted, {days} the age threshold.
STATEMENTS = {
    "expire_snapshots": "ALTER TABLE {table} EXECUTE expire_snapshots(retention_threshold => '{days}d')",
    "remove_orphan_files": "ALTER TABLE {table} EXECUTE remove_orphan_files(retention_threshold => '{days}d')",
    "rewrite_data_files": "ALTER TABLE {table} EXECUTE optimize",
    "rewrite_manifests": "ALTER TABLE {table} EXECUTE optimize_manifests",
}


@dataclass
class OrchestrationState:
    task_definition: aws.ecs.TaskDefinition | None = None
    schedules: list[aws.scheduler.Schedule] = field(default_factory=list)
    dead_letter_queue: aws.sqs.Queue | None = None
    schedule_group: aws.scheduler.ScheduleGroup | None = None
    described: list[dict[str, str]] = field(default_factory=list)

    def layer_outputs(self) -> dict[str, Any]:
        if self.schedule_group is None or self.dead_letter_queue is None:
            return {"schedules": []}
        return {"schedule_group": self.schedule_group.name, "schedules": self.described,
                "dead_letter_queue": self.dead_letter_queue.arn}

    def stack_outputs(self) -> dict[str, Any]:
        return {} if self.schedule_group is None else {"maintenance_schedule_group": self.schedule_group.name}


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    """The log groups this layer writes to (None: the platform's default name for the source)."""
    return {MAINTENANCE: None} if spec.maintenance else {}


def maintenance_script(server: str, catalog: str) -> list[str]:
    """Runs $MAINTENANCE_ACTION on every table of the catalog through the Trino coordinator; fails loudly."""
    cases = "\n".join(
        f"    {action}) sql=\"{statement.format(table='$table', days='$OLDER_THAN_DAYS')}\" ;;"
        for action, statement in STATEMENTS.items()
    )
    return [
        "set -eu",
        f"server={server}",
        f"catalog={catalog}",
        'run() { trino --server "$server" --user platform-maintenance --output-format TSV --execute "$1"; }',
        "tables=$(run \"SELECT table_schema, table_name FROM $catalog.information_schema.tables "
        "WHERE table_schema <> 'information_schema' AND table_type = 'BASE TABLE'\")",
        'printf "%s\\n" "$tables" | while IFS="$(printf "\\t")" read -r schema name; do',
        '  [ -n "$name" ] || continue',
        '  table="$catalog.\\"$schema\\".\\"$name\\""',
        '  case "$MAINTENANCE_ACTION" in',
        cases,
        '    *) echo "unknown maintenance action $MAINTENANCE_ACTION" >&2; exit 2 ;;',
        "  esac",
        '  echo "$MAINTENANCE_ACTION $table"',
        '  run "$sql"',
        "done",
    ]


def build(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups,
          compute: ComputeState) -> OrchestrationState:
    spec = ctx.spec
    state = OrchestrationState()
    if not spec.maintenance:
        return state
    assert trino.NAME in spec.enabled_services(), "the model refuses maintenance on aws without Trino"
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER)

    trino_service = spec.services[trino.NAME]
    role_of_catalog = registry()[spec.catalog.default].catalog
    assert role_of_catalog is not None
    catalog = role_of_catalog.engine_name
    entry_point, command = shell(maintenance_script(url(spec, trino.NAME, "http", Side.INTERNAL), catalog))
    container = Container(name=MAINTENANCE, image=trino_service.image, memory_mib=1024, entry_point=entry_point,
                          command=command, env={"MAINTENANCE_ACTION": "expire_snapshots", "OLDER_THAN_DAYS": "7"})
    execution = gov_module.execution_role(ctx, gov, MAINTENANCE, [MAINTENANCE], [])
    task = task_definition(ctx, LAYER, f"{spec.name}-{MAINTENANCE}", [container], tags=tags,
                           execution_role=execution, task_role=None, secret_refs={}, cpu=512, memory=1024)
    state.task_definition = task

    queue = aws.sqs.Queue(
        f"{spec.name}-maintenance-dlq", name=f"{spec.name}-{pulumi.get_stack()}-maintenance-dlq",
        kms_master_key_id=gov.key.arn, kms_data_key_reuse_period_seconds=3600,
        message_retention_seconds=14 * 24 * 3600, tags=tags, opts=opts,
    )
    state.dead_letter_queue = queue
    family = task.family
    role = gov_module.service_role(
        ctx, gov, "maintenance-scheduler", "scheduler.amazonaws.com",
        "EventBridge Scheduler: starts the platform's maintenance task, nothing else",
        [
            {"Sid": "RunMaintenanceTask", "Effect": "Allow", "Action": "ecs:RunTask",
             "Resource": gov.arn("ecs", family.apply(lambda f: f"task-definition/{f}:*")),
             "Condition": {"ArnLike": {"ecs:cluster": compute.cluster.arn}}},
            {"Sid": "TagTheTask", "Effect": "Allow", "Action": "ecs:TagResource", "Resource": "*",
             "Condition": {"StringEquals": {"ecs:CreateAction": "RunTask"}}},
            {"Sid": "PassTaskRoles", "Effect": "Allow", "Action": "iam:PassRole", "Resource": [execution.arn],
             "Condition": {"StringLike": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}},
            {"Sid": "DeadLetters", "Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue.arn},
            {"Sid": "EncryptDeadLetters", "Effect": "Allow", "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
             "Resource": gov.key.arn},
        ],
        layer=LAYER,
    )
    group = aws.scheduler.ScheduleGroup(f"{spec.name}-maintenance",
                                        name=f"{spec.name}-{pulumi.get_stack()}-maintenance",
                                        tags=tags, opts=opts)
    state.schedule_group = group
    for index, job in enumerate(spec.maintenance):
        state.schedules.append(_schedule(ctx, gov, compute, index, job, group, task, role, queue))
    state.described = [{"action": job.action, "cron": job.schedule, "expression": eventbridge_cron(job.schedule)}
                       for job in spec.maintenance]
    return state


def _schedule(ctx: AwsContext, gov: gov_module.GovernanceState, compute: ComputeState, index: int,
              job: MaintenanceJob, group: aws.scheduler.ScheduleGroup, task: aws.ecs.TaskDefinition,
              role: aws.iam.Role, queue: aws.sqs.Queue) -> aws.scheduler.Schedule:
    spec = ctx.spec
    network = gov.network
    overrides = {"containerOverrides": [{"name": MAINTENANCE, "environment": [
        {"name": "MAINTENANCE_ACTION", "value": job.action},
        {"name": "OLDER_THAN_DAYS", "value": str(job.older_than_days)},
    ]}]}
    return aws.scheduler.Schedule(
        f"{spec.name}-maintenance-{index}-{job.action.replace('_', '-')}",
        name=f"{index}-{job.action.replace('_', '-')}",
        group_name=group.name,
        description=f"{job.action} on every table of the {spec.catalog.default} catalog at {job.schedule} (UTC)",
        schedule_expression=eventbridge_cron(job.schedule),
        schedule_expression_timezone="UTC",
        flexible_time_window={"mode": "OFF"},
        state="ENABLED",
        target={
            "arn": compute.cluster.arn,
            "role_arn": role.arn,
            "input": json.dumps(overrides),
            "ecs_parameters": {
                "task_definition_arn": task.arn,
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
            "dead_letter_config": {"arn": queue.arn},
        },
        opts=ctx.opts(LAYER),
    )
