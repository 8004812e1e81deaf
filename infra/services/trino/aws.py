"""Trino on aws: a coordinator and workers on ECS Fargate, the coordinator at trino.<name>.internal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi_aws as aws

from infra.services.context import ServiceContext, Side, host_of, url
from infra.services.plans import EcsPlan
from infra.services.trino.config import IMAGE_ETC, NAME, etc_files, heap_bytes, secret_env
from infra.spec import Layer, PlatformSpec
from infra.targets.aws.alarms import Alarm
from infra.targets.aws.common import fargate_size
from infra.targets.aws.context import AwsComponent
from infra.targets.aws.ecs import FargateService, FargateServiceConfig, container_of, service_memory_mib
from infra.targets.aws.foundation import Foundation

LAYER = Layer.COMPUTE

#: The image's launcher (the ECS task writes its files, then execs it).
IMAGE_LAUNCHER = "/usr/lib/trino/bin/run-trino"


def ecs(ctx: ServiceContext) -> EcsPlan:
    """The coordinator on Fargate: plans and schedules only (workers: ``ecs_worker``)."""
    port = ctx.listen_port("http")
    return EcsPlan(env={**secret_env(ctx), "AWS_REGION": ctx.spec.aws.region}, command=[IMAGE_LAUNCHER],
                   files=etc_files(ctx, IMAGE_ETC, "coordinator", f"http://localhost:{port}", heap_bytes(ctx)))


def ecs_worker(ctx: ServiceContext, memory_mib: int) -> EcsPlan:
    """A worker task of ``memory_mib`` (the stack's Fargate size), heap three quarters of it."""
    heap = memory_mib * 3 // 4 * 1024 * 1024
    files = etc_files(ctx, IMAGE_ETC, "worker", ctx.url(NAME, "http"), heap)
    return EcsPlan(env={**secret_env(ctx), "AWS_REGION": ctx.spec.aws.region}, command=[IMAGE_LAUNCHER],
                   files=files)


#: The workers' log group and container name.
WORKER = "trino-worker"


@dataclass(frozen=True)
class TrinoClusterConfig:
    """The cluster's shape on aws: the coordinator's budget, the workers' count and Fargate size."""

    coordinator_memory_mib: int
    workers: int
    worker_cpu: int
    worker_memory_mib: int

    @classmethod
    def of(cls, spec: PlatformSpec) -> TrinoClusterConfig:
        return cls(coordinator_memory_mib=service_memory_mib(spec.services[NAME]), workers=spec.aws.trino_workers,
                   worker_cpu=spec.aws.trino_worker_cpu, worker_memory_mib=spec.aws.trino_worker_memory_mb)


class TrinoCluster(AwsComponent):
    """A coordinator (``trino.<name>.internal``, a Cloud Map A record) and workers on ECS Fargate.

    The catalog files are the ones every target renders; on aws they hold no S3 keys (the catalogs vend
    short-lived credentials), so the tasks have no AWS rights of their own.
    """

    def __init__(self, foundation: Foundation, config: TrinoClusterConfig) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:TrinoCluster", f"{spec.name}-{NAME}", ctx, LAYER)
        network = gov.network
        port = spec.services[NAME].ports["http"].internal
        tags = ctx.tags(LAYER, NAME)
        self.cluster = foundation.cluster(LAYER)
        self.workers = config.workers
        coordinator = container_of(ctx, NAME, memory_mib=config.coordinator_memory_mib, ports=[port])
        worker = container_of(ctx, NAME, ecs_worker(ServiceContext(spec, NAME), config.worker_memory_mib),
                              memory_mib=config.worker_memory_mib, ports=[port], log_source=WORKER)
        worker.name = WORKER
        entry = aws.servicediscovery.Service(
            f"{spec.name}-trino-dns", name=NAME,
            description=f"{host_of(spec, NAME, Side.INTERNAL)}: the Trino coordinator",
            dns_config={"namespace_id": network.namespace.id, "dns_records": [{"type": "A", "ttl": 10}],
                        "routing_policy": "MULTIVALUE"},
            tags=tags, opts=self.child_opts(),
        )
        self.services: dict[str, FargateService] = {}
        for container, (cpu, memory), desired, registries in (
            (coordinator, fargate_size(config.coordinator_memory_mib, min_cpu=1024), 1,
             {"service_registries": {"registry_arn": entry.arn}}),
            (worker, (config.worker_cpu, config.worker_memory_mib), config.workers, {}),
        ):
            self.services[container.name] = FargateService(
                FargateServiceConfig(
                    container=container, cpu=cpu, memory=memory,
                    task_role=None,  # no AWS rights of its own: table data only through catalog-vended credentials
                    desired_count=desired, security_group=network.sg("engines").id,
                    min_healthy_percent=0 if desired == 1 else 50, tags=tags, service_args=registries),
                ctx, LAYER, gov, foundation.logs, self.cluster, gov.secret_refs, parent=self,
            )
        self.url = url(spec, NAME, "http", Side.INTERNAL)
        self.register_outputs({"url": self.url})

    @property
    def coordinator(self) -> aws.ecs.Service:
        return self.services[NAME].service

    def layer_outputs(self) -> dict[str, Any]:
        return {"trino_url": self.url, "trino_workers": self.workers}

    def stack_outputs(self) -> dict[str, Any]:
        return {"trino_url": self.url}

    def watch(self, alarm: Alarm) -> None:
        """The coordinator not running: Trino's users are down."""
        alarm("trino-coordinator-down", "the Trino coordinator is not running; Trino's users are down",
              namespace="ECS/ContainerInsights", metric_name="RunningTaskCount",
              dimensions={"ClusterName": self.cluster.name, "ServiceName": NAME},
              statistic="Minimum", period=60, evaluation_periods=3, threshold=1,
              comparison_operator="LessThanThreshold", treat_missing_data="breaching")


def build(foundation: Foundation) -> TrinoCluster:
    return TrinoCluster(foundation, TrinoClusterConfig.of(foundation.spec))


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {NAME: None, WORKER: None}
