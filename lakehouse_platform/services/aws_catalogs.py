"""The catalogs on aws, as every catalog service's aws half builds them: each catalog an ECS service behind the
catalogs' one internal load balancer (``aws_parts.CatalogLoadBalancer``), and its setup jobs' task definitions.

Every catalog server shares one listener: a rule per catalog forwards ``<catalog>.<name>.internal`` (a CNAME
to the load balancer) to its target group. The jobs' task definitions are each part's ``catalog_jobs``; the aws
target runs them in order within ``pulumi up`` and lists them as the ``catalog_jobs`` stack output.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.alarms import Alarm
from lakehouse_platform.components.aws.common import fargate_size, physical_name
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.components.aws.ecs import (
    Container,
    FargateService,
    FargateServiceArgs,
    secret_names,
    task_definition,
)
from lakehouse_platform.components.aws.iam import execution_role
from lakehouse_platform.components.aws.network import cname
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.aws_parts import Foundation, PartComponent, container_of
from lakehouse_platform.services.context import ServiceContext, Side, host_of, url
from lakehouse_platform.services.plans import EcsPlan
from lakehouse_platform.services.registry import registry

LAYER = Layer.CATALOG


def catalog_servers(spec: PlatformSpec) -> list[str]:
    """The enabled catalogs that run as ECS services on aws (in registry order)."""
    enabled = spec.enabled_services()
    return [name for name, d in registry().catalogs().items() if d.aws.task is not None and name in enabled]


@dataclass(frozen=True)
class CatalogPorts:
    """The ports the catalogs' security groups admit, from the catalogs' specs."""

    catalog: int  # every catalog server's REST port (one load balancer listener)
    catalog_health: tuple[int, ...]  # health-check ports that differ from the REST port

    @classmethod
    def of(cls, spec: PlatformSpec) -> CatalogPorts:
        servers = catalog_servers(spec) or [n for n in registry().catalogs() if registry()[n].aws.task is not None]
        rest = {spec.services[n].ports["http"].internal for n in servers}
        if len(rest) != 1:
            raise ValueError(f"services.*.ports.http.internal: the catalogs on aws share one load balancer listener, "
                             f"so their REST ports must be equal; found {sorted(rest)} for {', '.join(servers)}")
        (catalog,) = rest
        health = []
        for name in servers:
            check = spec.services[name].health
            if check is not None and check.port is not None:
                port = spec.services[name].ports[check.port].internal
                if port != catalog and port not in health:
                    health.append(port)
        return cls(catalog=catalog, catalog_health=tuple(health))


class CatalogServer(PartComponent):
    """One catalog as an ECS service behind the load balancer, reached as ``<name>.<platform>.internal``, and its
    setup jobs' task definitions."""

    def __init__(self, foundation: Foundation, name: str, jobs: Sequence[str] = ()) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:CatalogServer", f"{spec.name}-{name}", ctx, LAYER)
        assert foundation.catalogs is not None, "the aws target makes the load balancer when a catalog runs on ECS"
        network = gov.network
        service = spec.services[name]
        health = service.health
        assert health is not None and health.port is not None
        tags = ctx.tags(LAYER, name)
        http_port = service.ports["http"].internal
        health_port = service.ports[health.port].internal
        interval = min(max(health.interval_s, 5), 300)
        priority = catalog_servers(spec).index(name) + 1
        self.name = name
        self.balancer = foundation.catalogs.balancer
        self.target_group = aws.lb.TargetGroup(
            f"{spec.name}-{name}", name=physical_name(spec, name), port=http_port, protocol="HTTP",
            target_type="ip", vpc_id=network.vpc.id, deregistration_delay=30,
            health_check={
                "enabled": True, "protocol": "HTTP", "path": health.path,
                "port": "traffic-port" if health_port == http_port else str(health_port),
                "interval": interval, "timeout": min(max(health.timeout_s, 2), interval - 1),
                "healthy_threshold": 2, "unhealthy_threshold": min(max(health.retries, 2), 10), "matcher": "200",
            },
            tags=tags, opts=self.child_opts(),
        )
        rule = aws.lb.ListenerRule(
            f"{spec.name}-{name}", listener_arn=foundation.catalogs.listener.arn, priority=priority * 10,
            conditions=[{"host_header": {"values": [host_of(spec, name, Side.INTERNAL)]}}],
            actions=[{"type": "forward", "target_group_arn": self.target_group.arn}],
            tags=tags, opts=self.child_opts(),
        )
        cname(ctx, name, self.balancer.dns_name, network,
              f"{host_of(spec, name, Side.INTERNAL)} -> the managed endpoint in front of {name}", self.child_opts(),
              tags)
        container = container_of(ctx, name, ecs_plan(ctx, name))
        cpu, memory = fargate_size(container.memory_mib, min_cpu=512)
        self.deployed = FargateService(f"{spec.name}-{name}", FargateServiceArgs(
            ctx=ctx, layer=LAYER, governance=gov, logs=foundation.logs, cluster=foundation.cluster(LAYER),
            container=container, cpu=cpu, memory=memory, task_role=gov.task_roles.get(name),
            desired_count=spec.aws.catalog_task_count, security_group=network.sg("catalogs").id,
            min_healthy_percent=100, tags=tags, secret_refs=foundation.secret_refs, depends_on=(rule,),
            service_args={"load_balancers": [{"target_group_arn": self.target_group.arn, "container_name": name,
                                              "container_port": http_port}],
                          "health_check_grace_period_seconds": health.ready_timeout_s}),
            opts=pulumi.ResourceOptions(parent=self))
        for job in jobs:
            if job in spec.enabled_services():
                catalog_job(foundation, job, container_of(ctx, job, ecs_plan(ctx, job), with_health=False),
                            owner=job, parent=self)
        self.register_outputs({"url": self.url})

    @property
    def url(self) -> str:
        role = registry()[self.name].catalog
        assert role is not None
        return url(self.ctx.spec, self.name, "http", Side.INTERNAL, role.path)

    def watch(self, alarm: Alarm) -> None:
        """A task failing its health check, no healthy task, and the catalog's own 5xx."""
        dimensions = {"TargetGroup": self.target_group.arn_suffix, "LoadBalancer": self.balancer.arn_suffix}
        name = self.name
        alarm(f"{name}-unhealthy", f"{name}: a catalog task fails its health check",
              namespace="AWS/ApplicationELB", metric_name="UnHealthyHostCount", dimensions=dimensions,
              statistic="Maximum", period=60, evaluation_periods=3, threshold=0,
              comparison_operator="GreaterThanThreshold", treat_missing_data="notBreaching")
        alarm(f"{name}-down", f"{name}: no healthy catalog task; no engine can find or commit to a table",
              namespace="AWS/ApplicationELB", metric_name="HealthyHostCount", dimensions=dimensions,
              statistic="Minimum", period=60, evaluation_periods=2, threshold=1,
              comparison_operator="LessThanThreshold", treat_missing_data="breaching")
        alarm(f"{name}-5xx", f"{name}: the catalog answered 5xx (it promises success or a retried 409)",
              namespace="AWS/ApplicationELB", metric_name="HTTPCode_Target_5XX_Count", dimensions=dimensions,
              statistic="Sum", period=300, evaluation_periods=1, threshold=0,
              comparison_operator="GreaterThanThreshold", treat_missing_data="notBreaching")


def ecs_plan(ctx: AwsContext, name: str) -> EcsPlan:
    """The ECS plan of a catalog or one of its jobs, from its definition's ``ecs`` renderer."""
    renderer = registry()[name].aws.task
    assert renderer is not None, f"{name} has no ECS renderer (placement is validated with the spec)"
    return renderer(ServiceContext(ctx.spec, name))


def catalog_job(foundation: Foundation, job: str, container: Container, *, owner: str,
                parent: PartComponent) -> aws.ecs.TaskDefinition:
    """A one-off job's task definition (its own execution role), kept in ``parent.catalog_jobs`` for CD."""
    ctx, spec = foundation.ctx, foundation.spec
    secret_refs = {**foundation.secret_refs, **parent.secret_refs}  # with what its own part made (the database's)
    execution = execution_role(ctx, foundation.gov, job, [job], secret_names(container.env), secret_refs)
    cpu, memory = fargate_size(container.memory_mib)
    task = task_definition(
        ctx, LAYER, f"{spec.name}-{job}", [container],
        tags=ctx.tags(LAYER, owner, **{"lakehouse.kind": "job"}), execution_role=execution,
        task_role=None, secret_refs=secret_refs, cpu=cpu, memory=memory, opts=parent.child_opts(),
    )
    parent.catalog_jobs[job] = task
    return task

