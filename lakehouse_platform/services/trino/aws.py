"""Trino on aws: a coordinator and workers on ECS Fargate, the coordinator at trino.<name>.internal; and the declared
tables (tables as code, orchestration), created and evolved through Trino by a one-off ECS task.

The catalogs and Trino are private, so the deploying machine cannot reach them: the same declaration as
on docker and native becomes idempotent Trino statements (``tables.trino_statements``), run by the Trino CLI
in a task inside the VPC as a deployment step (``EcsTaskRun``) whenever the declarations change: Trino's aws
part of the orchestration layer, after its coordinator (built in the compute layer).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws import iam
from lakehouse_platform.components.aws.alarms import Alarm
from lakehouse_platform.components.aws.common import fargate_size
from lakehouse_platform.components.aws.ecs import (
    Container,
    FargateService,
    FargateServiceArgs,
    service_memory_mib,
    shell,
    task_definition,
)
from lakehouse_platform.components.aws.run_task import EcsTaskRun
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.runtime import tables as declared_tables
from lakehouse_platform.services.aws_parts import Foundation, PartComponent, container_of
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext, Side, host_of, url
from lakehouse_platform.services.plans import EcsPlan
from lakehouse_platform.services.trino.config import IMAGE_ETC, NAME, etc_files, heap_bytes, secret_env

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


class TrinoCluster(PartComponent):
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
        coordinator = container_of(ctx, NAME, ecs(ServiceContext(spec, NAME)), memory_mib=config.coordinator_memory_mib,
                                   ports=[port])
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
            self.services[container.name] = FargateService(f"{spec.name}-{container.name}", FargateServiceArgs(
                ctx=ctx, layer=LAYER, governance=gov, logs=foundation.logs, cluster=self.cluster,
                container=container, cpu=cpu, memory=memory,
                task_role=None,  # no AWS rights of its own: table data only through catalog-vended credentials
                desired_count=desired, security_group=network.sg("engines").id,
                min_healthy_percent=0 if desired == 1 else 50, tags=tags, service_args=registries,
                secret_refs=gov.secret_refs), opts=pulumi.ResourceOptions(parent=self))
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


# -- the declared tables ---------------------------------------------------------------------------------------

TABLES_LAYER = Layer.ORCHESTRATION
TABLES = "tables"
#: Its aws part's name.
PART = "declared-tables"


def tables_enabled(spec: PlatformSpec) -> bool:
    """Trino creates the declared tables on aws: wherever the stack declares tables and runs Trino."""
    return bool(spec.tables) and NAME in spec.enabled_services()


def tables_log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {TABLES: None} if spec.tables else {}


def catalog_name(spec: PlatformSpec) -> str:
    """The default catalog as Trino knows it."""
    return default_catalog(spec).role.engine_name


def tables_script(server: str, statements: list[str]) -> list[str]:
    """Wait for the coordinator (10 min at most), then each statement through the Trino CLI, stopping at a failure."""
    lines = ["set -eu", f"server={server}",
             'i=0; until trino --server "$server" --user platform-tables --execute "SELECT 1" >/dev/null 2>&1; do',
             '  i=$((i + 1)); [ "$i" -lt 60 ] || { echo "Trino at $server never answered" >&2; exit 3; }; sleep 10',
             "done"]
    for sql in statements:
        lines.append(f'trino --server "$server" --user platform-tables --execute {shlex.quote(sql)}')
    lines.append('echo "declared tables applied"')
    return lines


def declare(foundation: Foundation, trino_service: pulumi.Resource | None) -> EcsTaskRun:
    """The declared tables through Trino, by a one-off task in the VPC, run whenever the declarations change."""
    ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
    tags = ctx.tags(TABLES_LAYER)
    statements = [sql for table in spec.tables
                  for sql in declared_tables.trino_statements(catalog_name(spec), spec.declaration(table))]
    entry_point, command = shell(tables_script(url(spec, NAME, "http", Side.INTERNAL), statements))
    container = Container(name=TABLES, image=spec.services[NAME].image, memory_mib=512,
                          entry_point=entry_point, command=command)
    execution = iam.execution_role(ctx, gov, TABLES, [TABLES], [])
    task = task_definition(ctx, TABLES_LAYER, f"{spec.name}-{TABLES}", [container], tags=tags, execution_role=execution,
                           task_role=None, secret_refs={}, cpu=256, memory=512)
    network = gov.network
    # The task logs there from its first line; the catalog must be set up before a table can be created in it.
    waits: list[pulumi.Resource] = [foundation.logs.groups[TABLES], *foundation.catalog_ready]
    if trino_service is not None:
        waits.append(trino_service)
    compute = foundation.cluster(Layer.COMPUTE)
    return EcsTaskRun(
        f"{spec.name}-declared-tables",
        description=f"declared tables ({', '.join(t.identifier for t in spec.tables)}) through Trino",
        cluster=compute.arn, task_definition=task.arn, subnets=network.private_subnet_ids,
        security_groups=[network.sg("engines").id], region=spec.aws.region,
        trigger=hashlib.sha256(json.dumps(statements).encode()).hexdigest(), log_group=foundation.logs.names[TABLES],
        tags=tags, opts=ctx.opts(TABLES_LAYER, depends_on=waits),
    )


class DeclaredTables(PartComponent):
    """The declared tables' deployment step, after Trino's coordinator (its resources stay under the layer)."""

    def __init__(self, foundation: Foundation) -> None:
        spec = foundation.spec
        super().__init__("platform:aws:DeclaredTables", f"{spec.name}-{PART}", foundation.ctx, TABLES_LAYER)
        trino = foundation.part(TrinoCluster)
        self.run = declare(foundation, trino.coordinator if trino else None)
        self.register_outputs({"task_arn": self.run.task_arn})

    def layer_outputs(self) -> dict[str, Any]:
        return {"declared_tables_task": self.run.task_arn}


def build_tables(foundation: Foundation) -> DeclaredTables:
    return DeclaredTables(foundation)
