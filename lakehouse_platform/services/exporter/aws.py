"""The exporter on aws: a Fargate service reading as the reader identity, a Prometheus agent beside it writing
into Amazon Managed Service for Prometheus (the prometheus package's aws part).
"""

from __future__ import annotations

import pulumi
import yaml

from lakehouse_platform.components.aws import iam
from lakehouse_platform.components.aws.alarms import Alarm
from lakehouse_platform.components.aws.common import fargate_size
from lakehouse_platform.components.aws.ecs import (
    Container,
    FargateService,
    FargateServiceArgs,
    files_then_exec,
)
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.aws_parts import Foundation, PartComponent, container_of
from lakehouse_platform.services.capabilities import METRICS, MetricsOnAws
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.exporter.config import NAME, exporter_config, secret_env
from lakehouse_platform.services.exporter.container import IMAGE_CONFIG
from lakehouse_platform.services.plans import EcsPlan
from lakehouse_platform.services.registry import registry

LAYER = Layer.OBSERVABILITY


def ecs(ctx: ServiceContext) -> EcsPlan:
    """On Fargate: the same image, which the aws target pushes and names by digest (``targets/aws/images.py``)."""
    config = exporter_config(ctx, Side.INTERNAL, "0.0.0.0", None, None)  # noqa: S104 - in its task
    return EcsPlan(env={"AWS_REGION": ctx.spec.aws.region, **secret_env(ctx.spec, Side.INTERNAL)},
                   command=["python", "-m", "lakehouse_platform.runtime.exporter", "--config", IMAGE_CONFIG],
                   files={IMAGE_CONFIG: config})


AGENT = "prometheus-agent"
AGENT_CONFIG = "/etc/prometheus/agent.yml"
AGENT_MEMORY_MIB = 256


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {NAME: None, AGENT: None}


def agent_config(spec: PlatformSpec, workspace_id: str, region: str) -> str:
    """The Prometheus agent beside the exporter: scrape it on localhost, remote-write to the workspace (SigV4)."""
    port = spec.services[NAME].ports["http"].internal
    interval = f"{spec.observability.scrape_interval_s}s"
    return yaml.safe_dump({
        "global": {"scrape_interval": interval, "external_labels": {"platform": spec.name}},
        "scrape_configs": [{"job_name": "lakehouse-exporter", "static_configs": [{"targets": [f"localhost:{port}"]}]}],
        "remote_write": [{"url": f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}"
                                 "/api/v1/remote_write", "sigv4": {"region": region}}],
    }, sort_keys=False)


class ExporterService(PartComponent):
    """The exporter on Fargate, reading as the reader identity's IAM role, with the Prometheus agent beside it."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:ExporterService", f"{spec.name}-{NAME}", ctx, LAYER)
        prometheus: MetricsOnAws | None = foundation.provider(METRICS)
        metrics_store = registry().provider(spec, METRICS)
        assert prometheus is not None and metrics_store is not None, \
            "the exporter's agent writes into the metrics store's workspace (built before it)"
        workspace = prometheus.workspace
        region = spec.aws.region
        # The exporter reads as the reader identity (its IAM role); the agent in its task may write the workspace.
        reader_role = gov.identity_roles[spec.governance.exporter]
        iam.grant(ctx, "exporter-remote-write", reader_role, [
            {"Sid": "RemoteWriteSignals", "Effect": "Allow", "Action": ["aps:RemoteWrite"],
             "Resource": workspace.arn}])
        service = spec.services[NAME]
        main = container_of(ctx, NAME, ecs(ServiceContext(spec, NAME)))
        agent_image = spec.services[metrics_store].image  # the store's own image, in agent mode
        # Its health check is the image's own (wget /-/ready on the agent's default 9090).
        agent = Container(name=AGENT, image=agent_image, memory_mib=AGENT_MEMORY_MIB, essential=True,
                          health=spec.services[metrics_store].health)
        agent.entry_point, _ = files_then_exec({}, [])
        agent.command = workspace.id.apply(  # an Output inside the task definition
            lambda wid: files_then_exec({AGENT_CONFIG: agent_config(spec, wid, region)},
                                        ["/bin/prometheus", "--agent", f"--config.file={AGENT_CONFIG}",
                                         "--storage.agent.path=/prometheus"])[1])
        # The smallest Fargate size that holds both containers (ECS refuses sizes off its table).
        cpu, memory = fargate_size(service.memory_bytes // (1024 * 1024) + AGENT_MEMORY_MIB)
        self.cluster = foundation.cluster(LAYER)
        self.deployed = FargateService(f"{spec.name}-{NAME}", FargateServiceArgs(
            ctx=ctx, layer=LAYER, governance=gov, logs=foundation.logs, cluster=self.cluster, container=main,
            sidecars=(agent,), cpu=cpu, memory=memory, task_role=reader_role, desired_count=1,
            security_group=gov.network.sg("engines").id, min_healthy_percent=0, tags=ctx.tags(LAYER, NAME),
            secret_refs=gov.secret_refs), opts=pulumi.ResourceOptions(parent=self))
        self.register_outputs({"service": self.deployed.service.name})

    def watch(self, alarm: Alarm) -> None:
        """The exporter not running: no signal is current and no alert of the rules can fire."""
        alarm("exporter-down", "the metrics exporter is not running: no table or service signal is current and no "
                               "alert of the rules can fire",
              namespace="ECS/ContainerInsights", metric_name="RunningTaskCount",
              dimensions={"ClusterName": self.cluster.name, "ServiceName": NAME},
              statistic="Minimum", period=60, evaluation_periods=3, threshold=1,
              comparison_operator="LessThanThreshold", treat_missing_data="breaching")


def build(foundation: Foundation) -> ExporterService:
    return ExporterService(foundation)
