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

from infra.services import trino
from infra.services.base import Side, url
from infra.spec import Layer
from infra.spec.model import MaintenanceJob
from infra.targets.aws import governance as gov_module
from infra.targets.aws.ecs import Container, shell, task_definition

if TYPE_CHECKING:
    from infra.layers.base import LayerComponent
    from infra.targets.aws import AwsTarget

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
    log_sources: list[str] = field(default_factory=list)


def scheduler_cron(schedule: str) -> str:
    """A five-field cron (UTC, Sunday = 0) as an EventBridge Scheduler ``cron()`` (six fields, Sunday = 1, one ``?``)."""
    minute, hour, day_of_month, month, day_of_week = schedule.split()

    def shift(field_value: str) -> str:
        def day(token: str) -> str:
            return str(int(token) % 7 + 1) if token.isdigit() else token

        parts = []
        for part in field_value.split(","):
            head, slash, step = part.partition("/")
            head = "-".join(day(t) for t in head.split("-"))
            parts.append(head + slash + step)
        return ",".join(parts)

    if day_of_week == "*":
        day_of_week = "?"
    else:
        day_of_month, day_of_week = "?", shift(day_of_week)
    return f"cron({minute} {hour} {day_of_month} {month} {day_of_week} *)"


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


def build(target: "AwsTarget", component: "LayerComponent") -> dict[str, Any]:
    spec = target.spec
    state = OrchestrationState()
    target.orchestration = state
    if not spec.maintenance:
        return {"schedules": []}
    assert trino.NAME in spec.enabled_services(), "the model refuses maintenance on aws without Trino"
    gov: gov_module.GovernanceState = target.governance
    compute = target.compute
    opts = target.opts(component)
    tags = target.tags(LAYER)

    trino_service = spec.services[trino.NAME]
    catalog = next(name for name, svc in trino.CATALOGS.items() if svc == spec.catalog.default)
    entry_point, command = shell(maintenance_script(url(spec, trino.NAME, "http", Side.INTERNAL), catalog))
    container = Container(name=MAINTENANCE, image=trino_service.image, memory_mib=1024, entry_point=entry_point,
                          command=command, env={"MAINTENANCE_ACTION": "expire_snapshots", "OLDER_THAN_DAYS": "7"})
    execution = gov_module.execution_role(target, MAINTENANCE, [MAINTENANCE], [])
    task = task_definition(target, component, f"{spec.name}-{MAINTENANCE}", [container], tags=tags,
                           execution_role=execution, task_role=None, secret_refs={}, cpu=512, memory=1024)
    state.task_definition = task
    state.log_sources.append(MAINTENANCE)

    queue = aws.sqs.Queue(
        f"{spec.name}-maintenance-dlq", name=f"{spec.name}-{pulumi.get_stack()}-maintenance-dlq", kms_master_key_id=gov.key.arn, kms_data_key_reuse_period_seconds=3600,
        message_retention_seconds=14 * 24 * 3600, tags=tags, opts=opts,
    )
    state.dead_letter_queue = queue
    family = task.family
    role = gov_module.service_role(
        target, "maintenance-scheduler", "scheduler.amazonaws.com",
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
    group = aws.scheduler.ScheduleGroup(f"{spec.name}-maintenance", name=f"{spec.name}-{pulumi.get_stack()}-maintenance",
                                        tags=tags, opts=opts)
    for index, job in enumerate(spec.maintenance):
        state.schedules.append(_schedule(target, component, index, job, group, task, role, queue))
    target.export(maintenance_schedule_group=group.name)
    return {
        "schedule_group": group.name,
        "schedules": [{"action": job.action, "cron": job.schedule, "expression": scheduler_cron(job.schedule)}
                      for job in spec.maintenance],
        "dead_letter_queue": queue.arn,
    }


def _schedule(target: "AwsTarget", component: "LayerComponent", index: int, job: MaintenanceJob,
              group: aws.scheduler.ScheduleGroup, task: aws.ecs.TaskDefinition, role: aws.iam.Role,
              queue: aws.sqs.Queue) -> aws.scheduler.Schedule:
    spec = target.spec
    network = target.governance.network
    overrides = {"containerOverrides": [{"name": MAINTENANCE, "environment": [
        {"name": "MAINTENANCE_ACTION", "value": job.action},
        {"name": "OLDER_THAN_DAYS", "value": str(job.older_than_days)},
    ]}]}
    return aws.scheduler.Schedule(
        f"{spec.name}-maintenance-{index}-{job.action.replace('_', '-')}",
        name=f"{index}-{job.action.replace('_', '-')}",
        group_name=group.name,
        description=f"{job.action} on every table of the {spec.catalog.default} catalog at {job.schedule} (UTC)",
        schedule_expression=scheduler_cron(job.schedule),
        schedule_expression_timezone="UTC",
        flexible_time_window={"mode": "OFF"},
        state="ENABLED",
        target={
            "arn": target.compute.cluster.arn,
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
                "tags": target.tags(LAYER, **{"lakehouse.maintenance": job.action}),
            },
            "retry_policy": {"maximum_retry_attempts": 2, "maximum_event_age_in_seconds": 3600},
            "dead_letter_config": {"arn": queue.arn},
        },
        opts=target.opts(component),
    )
