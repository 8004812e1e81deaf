"""Observability on AWS: every log in a KMS-encrypted CloudWatch log group, alarms someone receives, and the
table and service signals in Amazon Managed Service for Prometheus.

- one log group per ECS service and job, per managed engine (EMR Serverless, MSK, MSK Connect) and
  per RDS log export, encrypted with the platform's key and kept ``aws.log_retention_days``. They
  are built right after governance (``log_groups``: each layer module names its own log sources
  from the spec), and every writer waits for its group, so nothing creates an unencrypted one first;
- alarms to one SNS topic (KMS-encrypted; an email subscription when ``observability.alarm_email``):
  a catalog with an unhealthy or no healthy target, catalog 5xx (the catalog promises only
  success or a retried 409), the catalog database short of CPU or storage, the Trino coordinator
  not running, and maintenance invocations that failed into the dead-letter queue;
- signals (``signals``): an Amazon Managed Service for Prometheus workspace (KMS-encrypted) holding the
  same alert rules every target evaluates (``infra.operations.alerts``, one rule groups namespace), its
  alert manager publishing to the same SNS topic; the metrics exporter as a Fargate service reading as
  the reader identity's IAM role, with a Prometheus agent beside it (the pinned prom/prometheus image,
  ``--agent``) remote-writing with SigV4 into the workspace; and an alarm when the exporter is not
  running (nothing would raise the rest).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws
import yaml

from infra.operations.alerts import rules_yaml
from infra.services import exporter, prometheus, trino
from infra.spec import Layer, PlatformSpec
from infra.targets.aws.common import log_group_name, physical_name, policy_document
from infra.targets.aws.ecs import Container, container_of, fargate_service, files_then_exec
from infra.targets.aws.ecs import cluster as ecs_cluster

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.catalog import CatalogState
    from infra.targets.aws.compute import ComputeState
    from infra.targets.aws.governance import GovernanceState
    from infra.targets.aws.orchestration import OrchestrationState

LAYER = Layer.OBSERVABILITY
PERIOD = 60
AGENT = "prometheus-agent"
AGENT_CONFIG = "/etc/prometheus/agent.yml"
AGENT_MEMORY_MIB = 256


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    """The log groups this layer writes to: the exporter and its Prometheus agent."""
    if exporter.NAME not in spec.enabled_services():
        return {}
    return {exporter.NAME: None, AGENT: None}


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
    workspace: aws.amp.Workspace | None = None
    exporter_service: aws.ecs.Service | None = None

    def layer_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alarm_topic": self.topic.arn, "alarms": sorted(self.alarms)}
        if self.workspace is not None:
            out.update(prometheus_workspace=self.workspace.arn, prometheus_endpoint=self.workspace.prometheus_endpoint)
        return out

    def stack_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alarm_topic_arn": self.topic.arn}
        if self.workspace is not None:
            # Query with SigV4 (service aps): <endpoint>api/v1/query, .../api/v1/alerts
            out["prometheus_endpoint"] = self.workspace.prometheus_endpoint
        return out


def log_groups(ctx: AwsContext, gov: GovernanceState) -> LogGroups:
    """One KMS-encrypted group per log source every layer module declares for this spec."""
    import sys

    from infra.targets.aws import catalog, compute, orchestration

    spec = ctx.spec
    names: dict[str, str] = {}
    for module in (catalog, compute, orchestration, sys.modules[__name__]):
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

    if exporter.NAME in spec.enabled_services():
        signals(ctx, gov, logs, state)
        cluster = ecs_cluster_name(ctx)
        alarm("exporter-down", "the metrics exporter is not running: no table or service signal is current and no "
                               "alert of the rules can fire",
              namespace="ECS/ContainerInsights", metric_name="RunningTaskCount",
              dimensions={"ClusterName": cluster, "ServiceName": exporter.NAME},
              statistic="Minimum", period=PERIOD, evaluation_periods=3, threshold=1,
              comparison_operator="LessThanThreshold", treat_missing_data="breaching")

    return state


def ecs_cluster_name(ctx: AwsContext) -> str:
    return f"{ctx.spec.name}-{pulumi.get_stack()}-{LAYER.value}"


def alertmanager_definition(topic_arn: str, region: str) -> str:
    """The workspace's alert manager: every alert to the platform's SNS topic (the same one alarms use)."""
    config = {
        "route": {"receiver": "platform-topic", "group_by": ["alertname", "namespace", "table", "service"],
                  "group_wait": "30s", "repeat_interval": "4h"},
        "receivers": [{"name": "platform-topic",
                       "sns_configs": [{"topic_arn": topic_arn, "sigv4": {"region": region},
                                        "subject": "[{{ .Status }}] {{ .CommonLabels.alertname }}"}]}],
    }
    return yaml.safe_dump({"alertmanager_config": yaml.safe_dump(config, sort_keys=False)}, sort_keys=False)


def agent_config(spec: PlatformSpec, workspace_id: str, region: str) -> str:
    """The Prometheus agent beside the exporter: scrape it on localhost, remote-write to the workspace (SigV4)."""
    port = spec.services[exporter.NAME].ports["http"].internal
    interval = f"{spec.observability.scrape_interval_s}s"
    return yaml.safe_dump({
        "global": {"scrape_interval": interval, "external_labels": {"platform": spec.name}},
        "scrape_configs": [{"job_name": "lakehouse-exporter", "static_configs": [{"targets": [f"localhost:{port}"]}]}],
        "remote_write": [{"url": f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}"
                                 "/api/v1/remote_write", "sigv4": {"region": region}}],
    }, sort_keys=False)


def signals(ctx: AwsContext, gov: GovernanceState, logs: LogGroups, state: ObservabilityState) -> None:
    """The workspace, its rules and alert manager, and the exporter with its agent (see the module docstring)."""
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    region = spec.aws.region
    workspace = aws.amp.Workspace(f"{spec.name}-signals", alias=physical_name(spec, "signals", limit=100),
                                  kms_key_arn=gov.key.arn, tags=ctx.tags(LAYER), opts=opts)
    state.workspace = workspace
    aws.amp.RuleGroupNamespace(f"{spec.name}-alert-rules", name="lakehouse", workspace_id=workspace.id,
                               data=rules_yaml(spec), tags=ctx.tags(LAYER), opts=opts)
    aws.amp.AlertManagerDefinition(f"{spec.name}-alertmanager", workspace_id=workspace.id,
                                   definition=state.topic.arn.apply(lambda arn: alertmanager_definition(arn, region)),
                                   opts=opts)
    aws.sns.TopicPolicy(f"{spec.name}-alarms-publishers", arn=state.topic.arn, policy=policy_document(
        {"Sid": "CloudWatchAlarms", "Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"},
         "Action": "sns:Publish", "Resource": state.topic.arn,
         "Condition": {"StringEquals": {"aws:SourceAccount": gov.account_id}}},
        {"Sid": "ManagedPrometheusAlertManager", "Effect": "Allow", "Principal": {"Service": "aps.amazonaws.com"},
         "Action": ["sns:Publish", "sns:GetTopicAttributes"], "Resource": state.topic.arn,
         "Condition": {"StringEquals": {"aws:SourceAccount": gov.account_id},
                       "ArnEquals": {"aws:SourceArn": workspace.arn}}},
    ), opts=opts)

    # The exporter reads as the reader identity (its IAM role); the agent in its task may write the workspace.
    reader_role = gov.identity_roles[spec.governance.reader]
    from infra.targets.aws import governance as gov_module

    gov_module.grant(ctx, "exporter-remote-write", reader_role, [
        {"Sid": "RemoteWriteSignals", "Effect": "Allow", "Action": ["aps:RemoteWrite"], "Resource": workspace.arn}])
    service = spec.services[exporter.NAME]
    main = container_of(ctx, exporter.NAME)
    agent_image = spec.services[prometheus.NAME].image
    # Its health check is the image's own (wget /-/ready on the agent's default 9090).
    agent = Container(name=AGENT, image=agent_image, memory_mib=AGENT_MEMORY_MIB, essential=True,
                      health=spec.services[prometheus.NAME].health)
    agent.entry_point, _ = files_then_exec({}, [])
    agent.command = workspace.id.apply(  # type: ignore[assignment]  # an Output inside the task definition's JSON
        lambda wid: files_then_exec({AGENT_CONFIG: agent_config(spec, wid, region)},
                                    ["/bin/prometheus", "--agent", f"--config.file={AGENT_CONFIG}",
                                     "--storage.agent.path=/prometheus"])[1])
    memory = max(512, service.memory_bytes // (1024 * 1024) + AGENT_MEMORY_MIB)
    cluster = ecs_cluster(ctx, LAYER)
    deployed = fargate_service(
        ctx, LAYER, gov, logs, cluster, main, cpu=256 if memory <= 2048 else 512,
        memory=memory if memory <= 2048 else 4096,
        task_role=reader_role, desired_count=1, security_group=gov.network.sg("engines").id, min_healthy_percent=0,
        tags=ctx.tags(LAYER, exporter.NAME), secret_refs=gov.secret_refs, sidecars=[agent],
    )
    state.exporter_service = deployed.service
