"""Orchestration on AWS: the platform's maintenance schedule, run by EventBridge Scheduler.

Each ``maintenance`` job of the spec is a schedule in the orchestration layer's schedule group that
starts one ECS task on the compute cluster. The task is the Trino CLI (from the pinned Trino image)
running the job's Iceberg procedure on every table of the default catalog, through the Trino
coordinator: maintenance is scheduled by the platform, not by whoever wrote the pipeline.
Failed invocations go to a KMS-encrypted dead-letter queue the observability layer watches.
The statements are the native scheduler's (``infra.operations.maintenance``), with the job's
threshold as the session's minimum retention; a job of scope ``declared`` runs on the declared
tables that list its action, a job of scope ``all`` on every table except declared ones that do not.

Declared tables (``spec.tables``) are created and evolved through Trino by a one-off ECS task in the
VPC (the catalogs are private), run as a deployment step (``EcsTaskRun``) whenever the declarations
change: the same declaration as idempotent Trino statements (``tables.trino_statements``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.operations import maintenance
from infra.operations import tables as declared_tables
from infra.services import registry, trino
from infra.services.context import Side, url
from infra.spec import Layer, MaintenanceJob, PlatformSpec, eventbridge_cron
from infra.targets.aws import governance as gov_module
from infra.targets.aws.ecs import Container, shell, task_definition
from infra.targets.aws.run_task import EcsTaskRun

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.compute import ComputeState
    from infra.targets.aws.observability import LogGroups

LAYER = Layer.ORCHESTRATION
MAINTENANCE = "maintenance"

TABLES = "tables"


@dataclass
class OrchestrationState:
    task_definition: aws.ecs.TaskDefinition | None = None
    schedules: list[aws.scheduler.Schedule] = field(default_factory=list)
    dead_letter_queue: aws.sqs.Queue | None = None
    schedule_group: aws.scheduler.ScheduleGroup | None = None
    described: list[dict[str, str]] = field(default_factory=list)
    tables_run: EcsTaskRun | None = None

    def layer_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schedules": []}
        if self.schedule_group is not None and self.dead_letter_queue is not None:
            out = {"schedule_group": self.schedule_group.name, "schedules": self.described,
                   "dead_letter_queue": self.dead_letter_queue.arn}
        if self.tables_run is not None:
            out["declared_tables_task"] = self.tables_run.task_arn
        return out

    def stack_outputs(self) -> dict[str, Any]:
        return {} if self.schedule_group is None else {"maintenance_schedule_group": self.schedule_group.name}


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    """The log groups this layer writes to (None: the platform's default name for the source)."""
    sources: dict[str, str | None] = {MAINTENANCE: None} if spec.maintenance else {}
    if spec.tables:
        sources[TABLES] = None
    return sources


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


def tables_script(server: str, statements: list[str]) -> list[str]:
    """Wait for the coordinator (10 min at most), then each statement through the Trino CLI, stopping at a failure."""
    import shlex

    lines = ["set -eu", f"server={server}",
             'i=0; until trino --server "$server" --user platform-tables --execute "SELECT 1" >/dev/null 2>&1; do',
             '  i=$((i + 1)); [ "$i" -lt 60 ] || { echo "Trino at $server never answered" >&2; exit 3; }; sleep 10',
             "done"]
    for sql in statements:
        lines.append(f'trino --server "$server" --user platform-tables --execute {shlex.quote(sql)}')
    lines.append('echo "declared tables applied"')
    return lines


def build(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups,
          compute: ComputeState) -> OrchestrationState:
    spec = ctx.spec
    state = OrchestrationState()
    if spec.tables and trino.NAME in spec.enabled_services():
        state.tables_run = _declared_tables(ctx, gov, logs, compute)
    if not spec.maintenance:
        return state
    assert trino.NAME in spec.enabled_services(), "the model refuses maintenance on aws without Trino"
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER)

    trino_service = spec.services[trino.NAME]
    catalog = _catalog_name(spec)
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


def _catalog_name(spec: PlatformSpec) -> str:
    role = registry()[spec.catalog.default].catalog
    assert role is not None
    return role.engine_name


def _declared_tables(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups,
                     compute: ComputeState) -> EcsTaskRun:
    """The declared tables through Trino, by a one-off task in the VPC, run whenever the declarations change."""
    spec = ctx.spec
    tags = ctx.tags(LAYER)
    statements = [sql for table in spec.tables
                  for sql in declared_tables.trino_statements(_catalog_name(spec), table.model_dump(mode="json"))]
    entry_point, command = shell(tables_script(url(spec, trino.NAME, "http", Side.INTERNAL), statements))
    container = Container(name=TABLES, image=spec.services[trino.NAME].image, memory_mib=512,
                          entry_point=entry_point, command=command)
    execution = gov_module.execution_role(ctx, gov, TABLES, [TABLES], [])
    task = task_definition(ctx, LAYER, f"{spec.name}-{TABLES}", [container], tags=tags, execution_role=execution,
                           task_role=None, secret_refs={}, cpu=256, memory=512)
    network = gov.network
    waits: list[pulumi.Resource] = [logs.groups[TABLES]]  # the task logs there from its first line
    if trino.NAME in compute.services:
        waits.append(compute.services[trino.NAME])
    return EcsTaskRun(
        f"{spec.name}-declared-tables",
        description=f"declared tables ({', '.join(t.identifier for t in spec.tables)}) through Trino",
        cluster=compute.cluster.arn, task_definition=task.arn, subnets=network.private_subnet_ids,
        security_groups=[network.sg("engines").id], region=spec.aws.region,
        trigger=hashlib.sha256(json.dumps(statements).encode()).hexdigest(), log_group=logs.names[TABLES],
        tags=tags, opts=ctx.opts(LAYER, depends_on=waits),
    )


def _schedule(ctx: AwsContext, gov: gov_module.GovernanceState, compute: ComputeState, index: int,
              job: MaintenanceJob, group: aws.scheduler.ScheduleGroup, task: aws.ecs.TaskDefinition,
              role: aws.iam.Role, queue: aws.sqs.Queue) -> aws.scheduler.Schedule:
    spec = ctx.spec
    network = gov.network
    overrides = {"containerOverrides": [{"name": MAINTENANCE, "environment": [
        {"name": "MAINTENANCE_ACTION", "value": job.action},
        {"name": "OLDER_THAN_DAYS", "value": str(job.older_than_days)},
        *({"name": key, "value": value} for key, value in job_tables(spec, job).items()),
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
