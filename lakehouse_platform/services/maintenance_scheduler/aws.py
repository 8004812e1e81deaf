"""The maintenance schedule on aws: EventBridge Scheduler starts one ECS task per maintenance job (orchestration).

Each ``maintenance`` job of the spec is a schedule in the layer's schedule group that starts one task on the
compute cluster. The task is the platform's operations image running the same Python maintenance as the native
and lab schedulers (``python -m lakehouse_platform.runtime maintenance run``,
``lakehouse_platform/runtime/maintenance.py``): each
of the job's tables through Trino's Iceberg procedures, as ``governance.maintenance``, with the job's threshold as
the session's minimum retention; maintenance is implemented once. The task reads the catalog's metadata and
lists the warehouse as the reader identity (its IAM role), and prints the runs it made, one JSON record each, to
its log group; a failed table fails the task. Failed invocations go to a KMS-encrypted dead-letter queue,
watched by an alarm.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws import iam
from lakehouse_platform.components.aws.alarms import Alarm
from lakehouse_platform.components.aws.ecs import Container, files_then_exec, task_definition
from lakehouse_platform.model import Layer, MaintenanceJob, PlatformSpec, eventbridge_cron
from lakehouse_platform.runtime.config import ENV_MAINTENANCE_JOB
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.aws_parts import Foundation, PartComponent
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import Side
from lakehouse_platform.services.maintenance_scheduler.config import NAME
from lakehouse_platform.services.operations_config import (
    host_paths,
    maintenance_job_ids,
    operation_secrets,
    operations_config,
)

LAYER = Layer.ORCHESTRATION
MAINTENANCE = "maintenance"
#: Where the task keeps its config and its (per-task) run record: the operations image's user may write /tmp.
TASK_STATE = "/tmp/lakehouse"
TASK_CONFIG = f"{TASK_STATE}/operations.json"
TASK_MEMORY_MIB = 512


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {MAINTENANCE: None}


def enabled(spec: PlatformSpec) -> bool:
    """Maintenance runs on aws when the stack schedules any (the model refuses that without Trino)."""
    return bool(spec.maintenance)


def task_command(spec: PlatformSpec, stack: str) -> tuple[list[str], list[str]]:
    """(entryPoint, command) of the maintenance task: write the stack's operations config, run the job named
    by ``$MAINTENANCE_JOB`` (the schedule's override) with the project's own maintenance."""
    config = operations_config(spec, stack, host_paths(spec, TASK_STATE), Side.INTERNAL)
    return files_then_exec({TASK_CONFIG: config.dump()},
                           ["python", "-m", "lakehouse_platform.runtime", "maintenance", "run", "--config",
                            TASK_CONFIG])


class MaintenanceSchedules(PartComponent):
    """One EventBridge schedule per maintenance job, each starting the maintenance task on the compute cluster."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:MaintenanceSchedules", f"{spec.name}-{MAINTENANCE}", ctx, LAYER)
        opts = self.child_opts()
        tags = ctx.tags(LAYER)
        self.cluster = foundation.cluster(Layer.COMPUTE)
        entry_point, command = task_command(spec, pulumi.get_stack())
        env = support.catalog_secret_env(spec)
        secret_refs = iam.secret_refs_for(ctx, gov, operation_secrets(spec), NAME)
        container = Container(name=MAINTENANCE, image=spec.services[NAME].image, memory_mib=TASK_MEMORY_MIB,
                              entry_point=entry_point, command=command,
                              env={"AWS_REGION": spec.aws.region, "PYTHONUNBUFFERED": "1", **env})
        execution = iam.execution_role(ctx, gov, MAINTENANCE, [MAINTENANCE], sorted(secret_refs), secret_refs)
        # The reader identity's role: the task lists the warehouse and reads table metadata, never writes it
        # (Trino rewrites and expires, with the credentials the catalog vends it).
        reader = gov.identity_roles[spec.governance.reader]
        self.task = task_definition(ctx, LAYER, f"{spec.name}-{MAINTENANCE}", [container], tags=tags,
                                    execution_role=execution, task_role=reader, secret_refs=secret_refs, cpu=256,
                                    memory=TASK_MEMORY_MIB, opts=opts)
        self.dead_letter_queue = aws.sqs.Queue(
            f"{spec.name}-maintenance-dlq", name=f"{spec.name}-{pulumi.get_stack()}-maintenance-dlq",
            kms_master_key_id=gov.key.arn, kms_data_key_reuse_period_seconds=3600,
            message_retention_seconds=14 * 24 * 3600, tags=tags, opts=opts,
        )
        family = self.task.family
        self.role = iam.service_role(
            ctx, gov, "maintenance-scheduler", "scheduler.amazonaws.com",
            "EventBridge Scheduler: starts the platform's maintenance task, nothing else",
            [
                {"Sid": "RunMaintenanceTask", "Effect": "Allow", "Action": "ecs:RunTask",
                 "Resource": gov.arn("ecs", family.apply(lambda f: f"task-definition/{f}:*")),
                 "Condition": {"ArnLike": {"ecs:cluster": self.cluster.arn}}},
                {"Sid": "TagTheTask", "Effect": "Allow", "Action": "ecs:TagResource", "Resource": "*",
                 "Condition": {"StringEquals": {"ecs:CreateAction": "RunTask"}}},
                {"Sid": "PassTaskRoles", "Effect": "Allow", "Action": "iam:PassRole",
                 "Resource": [execution.arn, reader.arn],
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
        jobs = list(zip(spec.maintenance, maintenance_job_ids(spec), strict=True))
        self.schedules = [self._schedule(foundation, index, job, job_id) for index, (job, job_id) in enumerate(jobs)]
        self.described = [{"job": job_id, "action": job.action, "cron": job.schedule,
                           "expression": eventbridge_cron(job.schedule)} for job, job_id in jobs]
        self.register_outputs({"schedule_group": self.group.name})

    def _schedule(self, foundation: Foundation, index: int, job: MaintenanceJob,
                  job_id: str) -> aws.scheduler.Schedule:
        ctx, spec = foundation.ctx, foundation.spec
        network = foundation.gov.network
        overrides = {"containerOverrides": [{"name": MAINTENANCE,
                                             "environment": [{"name": ENV_MAINTENANCE_JOB, "value": job_id}]}]}
        return aws.scheduler.Schedule(
            f"{spec.name}-maintenance-{index}-{job.action.replace('_', '-')}",
            name=f"{index}-{job.action.replace('_', '-')}",
            group_name=self.group.name,
            description=f"{job_id}: {job.action} on the {default_catalog(spec).name} catalog's tables "
                        f"(scope {job.scope}) at {job.schedule} (UTC)",
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
