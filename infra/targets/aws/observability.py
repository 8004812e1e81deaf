"""Observability on AWS: every log in a KMS-encrypted CloudWatch log group, and alarms someone receives.

- one log group per ECS service and job, per managed engine (EMR Serverless, MSK, MSK Connect) and
  per RDS log export, encrypted with the platform's key and kept ``aws.log_retention_days``; the
  resources that write to them wait for them (see common.Deferred), so nothing creates its own
  unencrypted group first;
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
    from infra.layers.base import LayerComponent
    from infra.targets.aws import AwsTarget

LAYER = Layer.OBSERVABILITY
PERIOD = 60


@dataclass
class ObservabilityState:
    topic: aws.sns.Topic
    log_groups: dict[str, aws.cloudwatch.LogGroup] = field(default_factory=dict)
    alarms: dict[str, aws.cloudwatch.MetricAlarm] = field(default_factory=dict)


def build(target: "AwsTarget", component: "LayerComponent") -> dict[str, Any]:
    spec = target.spec
    gov = target.governance
    opts = target.opts(component)
    key = gov.key

    sources: list[str] = []
    for layer_state in (target.catalog, target.compute, target.orchestration):
        if layer_state is not None:
            sources += [s for s in layer_state.log_sources if s not in sources]
    names = {source: log_group_name(spec, source) for source in sources}
    catalog = target.catalog
    if catalog is not None and catalog.db_identifier:
        for export in ("postgresql", "upgrade"):
            names[f"rds-{export}"] = f"/aws/rds/instance/{catalog.db_identifier}/{export}"

    topic = aws.sns.Topic(f"{spec.name}-alarms", display_name=f"{spec.name} platform alarms",
                          kms_master_key_id=key.arn, tags=target.tags(LAYER), opts=opts)
    state = ObservabilityState(topic)
    target.observability = state
    for source, name in names.items():
        state.log_groups[source] = aws.cloudwatch.LogGroup(
            f"{spec.name}-logs-{source}", name=name, kms_key_id=key.arn,
            retention_in_days=spec.aws.log_retention_days,
            tags=target.tags(LAYER, **{"lakehouse.source": source}), opts=opts,
        )
    target.resolve_logs(list(state.log_groups.values()))

    if spec.observability.alarm_email:
        aws.sns.TopicSubscription(f"{spec.name}-alarms-email", topic=topic.arn, protocol="email",
                                  endpoint=spec.observability.alarm_email, opts=opts)

    def alarm(key_name: str, description: str, **kwargs: Any) -> None:
        state.alarms[key_name] = aws.cloudwatch.MetricAlarm(
            f"{spec.name}-{key_name}", alarm_description=description, alarm_actions=[topic.arn],
            ok_actions=[topic.arn], tags=target.tags(LAYER, **{"lakehouse.watches": key_name}), opts=opts, **kwargs,
        )

    if catalog is not None and catalog.load_balancer is not None:
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
    if catalog is not None and catalog.db_identifier:
        dimensions = {"DBInstanceIdentifier": catalog.db_identifier}
        alarm("catalog-db-cpu", "catalog database CPU above 80% for 15 minutes", namespace="AWS/RDS",
              metric_name="CPUUtilization", dimensions=dimensions, statistic="Average", period=300,
              evaluation_periods=3, threshold=80, comparison_operator="GreaterThanThreshold",
              treat_missing_data="missing")
        free_bytes = spec.aws.rds_allocated_storage_gb * 1024**3 // 10
        alarm("catalog-db-storage", "catalog database has less than 10% of its storage free", namespace="AWS/RDS",
              metric_name="FreeStorageSpace", dimensions=dimensions, statistic="Minimum", period=300,
              evaluation_periods=1, threshold=free_bytes, comparison_operator="LessThanThreshold",
              treat_missing_data="missing")
    compute = target.compute
    if compute is not None and trino.NAME in compute.services:
        alarm("trino-coordinator-down", "the Trino coordinator is not running; Trino's users are down",
              namespace="ECS/ContainerInsights", metric_name="RunningTaskCount",
              dimensions={"ClusterName": compute.cluster.name, "ServiceName": trino.NAME},
              statistic="Minimum", period=PERIOD, evaluation_periods=3, threshold=1,
              comparison_operator="LessThanThreshold", treat_missing_data="breaching")
    orchestration = target.orchestration
    if orchestration is not None and orchestration.dead_letter_queue is not None:
        alarm("maintenance-failed", "a maintenance run could not be started; tables stop being maintained",
              namespace="AWS/SQS", metric_name="ApproximateNumberOfMessagesVisible",
              dimensions={"QueueName": orchestration.dead_letter_queue.name}, statistic="Maximum", period=300,
              evaluation_periods=1, threshold=0, comparison_operator="GreaterThanThreshold",
              treat_missing_data="notBreaching")

    target.export(alarm_topic_arn=topic.arn)
    return {
        "alarm_topic": topic.arn,
        "log_groups": dict(names),
        "alarms": sorted(state.alarms),
    }
