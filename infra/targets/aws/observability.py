"""Observability on AWS: every log in a KMS-encrypted CloudWatch log group, and alarms someone receives.

- one log group per ECS service and job, per managed engine (EMR Serverless, MSK, MSK Connect) and
  per RDS log export, encrypted with the platform's key and kept ``aws.log_retention_days``. They
  are built right after governance (``log_groups``: each layer module names its own log sources
  from the spec), and every writer waits for its group, so nothing creates an unencrypted one first;
- alarms to one SNS topic (KMS-encrypted; an email subscription when ``observability.alarm_email``):
  a catalog with an unhealthy or no healthy target, catalog 5xx (the catalog promises only
  success or a retried 409), the catalog database short of CPU or storage, the Trino coordinator
  not running, and maintenance invocations that failed into the dead-letter queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi_aws as aws

from infra.services import trino
from infra.spec import Layer
from infra.targets.aws.common import log_group_name

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.catalog import CatalogState
    from infra.targets.aws.compute import ComputeState
    from infra.targets.aws.governance import GovernanceState
    from infra.targets.aws.orchestration import OrchestrationState

LAYER = Layer.OBSERVABILITY
PERIOD = 60


@dataclass
class LogGroups:
    """Every log group of the stack, by source; built before anything that writes to one."""

    names: dict[str, str]
    groups: dict[str, aws.cloudwatch.LogGroup]

    def group(self, source: str) -> aws.cloudwatch.LogGroup:
        """The group a writer waits for; a source no layer declared is an ordering bug, not a skip."""
        if source not in self.groups:
            raise KeyError(f"no log group for {source!r}: add it to its layer module's log_sources(); "
                           f"declared: {', '.join(self.groups)}")
        return self.groups[source]


@dataclass
class ObservabilityState:
    topic: aws.sns.Topic
    logs: LogGroups
    alarms: dict[str, aws.cloudwatch.MetricAlarm] = field(default_factory=dict)

    def layer_outputs(self) -> dict[str, Any]:
        return {"alarm_topic": self.topic.arn, "alarms": sorted(self.alarms)}

    def stack_outputs(self) -> dict[str, Any]:
        return {"alarm_topic_arn": self.topic.arn}


def log_groups(ctx: AwsContext, gov: GovernanceState) -> LogGroups:
    """One KMS-encrypted group per log source every layer module declares for this spec."""
    from infra.targets.aws import catalog, compute, orchestration

    spec = ctx.spec
    names: dict[str, str] = {}
    for module in (catalog, compute, orchestration):
        for source, name in module.log_sources(spec).items():
            names.setdefault(source, name or log_group_name(spec, source))
    groups = {
        source: aws.cloudwatch.LogGroup(
            f"{spec.name}-logs-{source}", name=name, kms_key_id=gov.key.arn,
            retention_in_days=spec.aws.log_retention_days,
            tags=ctx.tags(LAYER, **{"lakehouse.source": source}), opts=ctx.opts(LAYER),
        )
        for source, name in names.items()
    }
    return LogGroups(names, groups)


def alarms(ctx: AwsContext, gov: GovernanceState, logs: LogGroups, catalog: CatalogState, compute: ComputeState,
           orchestration: OrchestrationState) -> ObservabilityState:
    """Alarms on what the other layers built, to one encrypted topic."""
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    topic = aws.sns.Topic(f"{spec.name}-alarms", display_name=f"{spec.name} platform alarms",
                          kms_master_key_id=gov.key.arn, tags=ctx.tags(LAYER), opts=opts)
    state = ObservabilityState(topic, logs)

    if spec.observability.alarm_email:
        aws.sns.TopicSubscription(f"{spec.name}-alarms-email", topic=topic.arn, protocol="email",
                                  endpoint=spec.observability.alarm_email, opts=opts)

    def alarm(key_name: str, description: str, **kwargs: Any) -> None:
        state.alarms[key_name] = aws.cloudwatch.MetricAlarm(
            f"{spec.name}-{key_name}", alarm_description=description, alarm_actions=[topic.arn],
            ok_actions=[topic.arn], tags=ctx.tags(LAYER, **{"lakehouse.watches": key_name}), opts=opts, **kwargs,
        )

    if catalog.load_balancer is not None:
        balancer = catalog.load_balancer.arn_suffix
        for name, group in catalog.target_groups.items():
            dimensions = {"TargetGroup": group.arn_suffix, "LoadBalancer": balancer}
            alarm(f"{name}-unhealthy", f"{name}: a catalog task fails its health check",
                  namespace="AWS/ApplicationELB", metric_name="UnHealthyHostCount", dimensions=dimensions,
                  statistic="Maximum", period=PERIOD, evaluation_periods=3, threshold=0,
                  comparison_operator="GreaterThanThreshold", treat_missing_data="notBreaching")
            alarm(f"{name}-down", f"{name}: no healthy catalog task; no engine can find or commit to a table",
                  namespace="AWS/ApplicationELB", metric_name="HealthyHostCount", dimensions=dimensions,
                  statistic="Minimum", period=PERIOD, evaluation_periods=2, threshold=1,
                  comparison_operator="LessThanThreshold", treat_missing_data="breaching")
            alarm(f"{name}-5xx", f"{name}: the catalog answered 5xx (it promises success or a retried 409)",
                  namespace="AWS/ApplicationELB", metric_name="HTTPCode_Target_5XX_Count", dimensions=dimensions,
                  statistic="Sum", period=300, evaluation_periods=1, threshold=0,
                  comparison_operator="GreaterThanThreshold", treat_missing_data="notBreaching")
        alarm("catalogs-lb-5xx", "the catalogs' load balancer answered 5xx itself (no target could answer)",
              namespace="AWS/ApplicationELB", metric_name="HTTPCode_ELB_5XX_Count",
              dimensions={"LoadBalancer": balancer}, statistic="Sum", period=300, evaluation_periods=1,
              threshold=0, comparison_operator="GreaterThanThreshold", treat_missing_data="notBreaching")
    if catalog.db_identifier:
        db_dimensions = {"DBInstanceIdentifier": catalog.db_identifier}
        alarm("catalog-db-cpu", "catalog database CPU above 80% for 15 minutes", namespace="AWS/RDS",
              metric_name="CPUUtilization", dimensions=db_dimensions, statistic="Average", period=300,
              evaluation_periods=3, threshold=80, comparison_operator="GreaterThanThreshold",
              treat_missing_data="missing")
        free_bytes = spec.aws.rds_allocated_storage_gb * 1024**3 // 10
        alarm("catalog-db-storage", "catalog database has less than 10% of its storage free", namespace="AWS/RDS",
              metric_name="FreeStorageSpace", dimensions=db_dimensions, statistic="Minimum", period=300,
              evaluation_periods=1, threshold=free_bytes, comparison_operator="LessThanThreshold",
              treat_missing_data="missing")
    if trino.NAME in compute.services:
        alarm("trino-coordinator-down", "the Trino coordinator is not running; Trino's users are down",
              namespace="ECS/ContainerInsights", metric_name="RunningTaskCount",
              dimensions={"ClusterName": compute.cluster.name, "ServiceName": trino.NAME},
              statistic="Minimum", period=PERIOD, evaluation_periods=3, threshold=1,
              comparison_operator="LessThanThreshold", treat_missing_data="breaching")
    if orchestration.dead_letter_queue is not None:
        alarm("maintenance-failed", "a maintenance run could not be started; tables stop being maintained",
              namespace="AWS/SQS", metric_name="ApproximateNumberOfMessagesVisible",
              dimensions={"QueueName": orchestration.dead_letter_queue.name}, statistic="Maximum", period=300,
              evaluation_periods=1, threshold=0, comparison_operator="GreaterThanThreshold",
              treat_missing_data="notBreaching")

    return state
