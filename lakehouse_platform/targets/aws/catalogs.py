"""The catalogs on aws: one internal load balancer in front of them, each catalog an ECS service behind it, and
their setup jobs as one-off ECS tasks that ``pulumi up`` runs in order (``bootstrap``: each an ``EcsTaskRun``), so
what needs the catalog (declared tables, the Flink application, the connectors) waits for it (catalog layer).

Every catalog server shares one listener: a rule per catalog forwards ``<catalog>.<name>.internal`` (a CNAME
to the load balancer) to its target group. The jobs' task definitions are also the ``catalog_jobs`` stack output,
in the order they run (the database's init, then each catalog's jobs in start order), each with the
``aws ecs run-task`` line that runs it again by hand (the jobs are idempotent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.model import Layer
from lakehouse_platform.services import registry
from lakehouse_platform.services.context import Side, host_of, url
from lakehouse_platform.targets.aws import governance as gov_module
from lakehouse_platform.targets.aws import network as network_module
from lakehouse_platform.targets.aws.common import fargate_size, physical_name
from lakehouse_platform.targets.aws.context import AwsComponent
from lakehouse_platform.targets.aws.ecs import (
    Container,
    FargateService,
    FargateServiceConfig,
    container_of,
    secret_names,
)
from lakehouse_platform.targets.aws.ecs import task_definition as ecs_task_definition
from lakehouse_platform.targets.aws.foundation import Foundation
from lakehouse_platform.targets.aws.run_task import EcsTaskRun

LAYER = Layer.CATALOG


def servers(foundation: Foundation) -> list[str]:
    """The enabled catalogs that run as ECS services (registry order)."""
    return network_module.catalog_servers(foundation.spec)


class CatalogLoadBalancer(AwsComponent):
    """The internal load balancer every catalog server sits behind, with its one listener (a 404 by default)."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, network = foundation.ctx, foundation.spec, foundation.gov.network
        super().__init__("platform:aws:CatalogLoadBalancer", f"{spec.name}-catalogs", ctx, LAYER)
        self.balancer = aws.lb.LoadBalancer(
            f"{spec.name}-catalogs", name=physical_name(spec, "catalogs"), internal=True,
            load_balancer_type="application", security_groups=[network.sg("lb").id],
            subnets=network.private_subnet_ids, drop_invalid_header_fields=True, idle_timeout=120,
            tags=ctx.tags(LAYER), opts=self.child_opts(),
        )
        self.listener = aws.lb.Listener(
            f"{spec.name}-catalogs-http", load_balancer_arn=self.balancer.arn,
            port=network_module.Ports.of(spec).catalog, protocol="HTTP",
            default_actions=[{"type": "fixed-response", "fixed_response": {
                "content_type": "text/plain", "status_code": "404",
                "message_body": f"no catalog at this host; use <catalog>.{spec.name}.internal"}}],
            tags=ctx.tags(LAYER), opts=self.child_opts(),
        )
        foundation.load_balancer, foundation.listener = self.balancer, self.listener
        self.register_outputs({"dns_name": self.balancer.dns_name})

    def watch(self, alarm: Any) -> None:
        """The load balancer's own 5xx: no target could answer."""
        alarm("catalogs-lb-5xx", "the catalogs' load balancer answered 5xx itself (no target could answer)",
              namespace="AWS/ApplicationELB", metric_name="HTTPCode_ELB_5XX_Count",
              dimensions={"LoadBalancer": self.balancer.arn_suffix}, statistic="Sum", period=300,
              evaluation_periods=1, threshold=0, comparison_operator="GreaterThanThreshold",
              treat_missing_data="notBreaching")


class CatalogServer(AwsComponent):
    """One catalog as an ECS service behind the load balancer, reached as ``<name>.<platform>.internal``, and its
    setup jobs' task definitions."""

    def __init__(self, foundation: Foundation, name: str, jobs: Sequence[str] = ()) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:CatalogServer", f"{spec.name}-{name}", ctx, LAYER)
        assert foundation.load_balancer is not None and foundation.listener is not None
        network = gov.network
        service = spec.services[name]
        health = service.health
        assert health is not None and health.port is not None
        tags = ctx.tags(LAYER, name)
        http_port = service.ports["http"].internal
        health_port = service.ports[health.port].internal
        interval = min(max(health.interval_s, 5), 300)
        priority = servers(foundation).index(name) + 1
        self.name = name
        self.balancer = foundation.load_balancer
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
            f"{spec.name}-{name}", listener_arn=foundation.listener.arn, priority=priority * 10,
            conditions=[{"host_header": {"values": [host_of(spec, name, Side.INTERNAL)]}}],
            actions=[{"type": "forward", "target_group_arn": self.target_group.arn}],
            tags=tags, opts=self.child_opts(),
        )
        network_module.cname(ctx, name, foundation.load_balancer.dns_name, network, self.child_opts(), tags)
        container = container_of(ctx, name)
        cpu, memory = fargate_size(container.memory_mib, min_cpu=512)
        self.deployed = FargateService(
            FargateServiceConfig(
                container=container, cpu=cpu, memory=memory, task_role=gov.task_roles.get(name),
                desired_count=spec.aws.catalog_task_count, security_group=network.sg("catalogs").id,
                min_healthy_percent=100, tags=tags,
                service_args={"load_balancers": [{"target_group_arn": self.target_group.arn, "container_name": name,
                                                  "container_port": http_port}],
                              "health_check_grace_period_seconds": health.ready_timeout_s}),
            ctx, LAYER, gov, foundation.logs, foundation.cluster(LAYER), foundation.secret_refs,
            depends_on=[rule], parent=self,
        )
        for job in jobs:
            if job in spec.enabled_services():
                catalog_job(foundation, job, container_of(ctx, job, with_health=False), owner=job, parent=self)
        self.register_outputs({"url": self.url})

    @property
    def url(self) -> str:
        role = registry()[self.name].catalog
        assert role is not None
        return url(self.ctx.spec, self.name, "http", Side.INTERNAL, role.path)

    def watch(self, alarm: Any) -> None:
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


def catalog_job(foundation: Foundation, job: str, container: Container, *, owner: str,
                parent: AwsComponent) -> aws.ecs.TaskDefinition:
    """A one-off job's task definition (its own execution role), recorded for the ``catalog_jobs`` output."""
    ctx, spec = foundation.ctx, foundation.spec
    execution = gov_module.execution_role(ctx, foundation.gov, job, [job], secret_names(container.env),
                                          foundation.secret_refs)
    cpu, memory = fargate_size(container.memory_mib)
    task = ecs_task_definition(
        ctx, LAYER, f"{spec.name}-{job}", [container],
        tags=ctx.tags(LAYER, owner, **{"lakehouse.kind": "job"}), execution_role=execution,
        task_role=None, secret_refs=foundation.secret_refs, cpu=cpu, memory=memory, opts=parent.child_opts(),
    )
    foundation.catalog_jobs[job] = task
    return task


def run_task_command(cluster: pulumi.Input[str], task: pulumi.Input[str], subnets: Sequence[pulumi.Input[str]],
                     groups: Sequence[pulumi.Input[str]]) -> pulumi.Output[str]:
    """The ``aws ecs run-task`` line CD runs for a one-off job (then ``aws ecs wait tasks-stopped``)."""
    def line(values: list[Any]) -> str:
        cluster_name, task_arn, *rest = values
        subnet_ids, group_ids = rest[: len(subnets)], rest[len(subnets):]
        network = (f"awsvpcConfiguration={{subnets=[{','.join(subnet_ids)}],"
                   f"securityGroups=[{','.join(group_ids)}],assignPublicIp=DISABLED}}")
        return (f"aws ecs run-task --cluster {cluster_name} --task-definition {task_arn} --launch-type FARGATE "
                f"--network-configuration '{network}'")

    return pulumi.Output.all(cluster, task, *subnets, *groups).apply(line)


def run_spec(foundation: Foundation, first: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The catalog jobs in the order CD runs them: ``first`` (the database's init), then the start order."""
    spec = foundation.spec
    order = [j for j in first if j in foundation.catalog_jobs]
    order += [n for n in spec.start_order() if n in foundation.catalog_jobs and n not in order]
    cluster = foundation.cluster(LAYER)
    network = foundation.gov.network
    return {
        job: {
            "order": order.index(job),
            "cluster": cluster.name,
            "task_definition": foundation.catalog_jobs[job].arn,
            "subnets": network.private_subnet_ids,
            "security_groups": [network.sg("catalogs").id],
            "command": run_task_command(cluster.name, foundation.catalog_jobs[job].arn, network.private_subnet_ids,
                                        [network.sg("catalogs").id]),
        }
        for job in order
    }


def bootstrap(foundation: Foundation, first: Sequence[str] = ()) -> list[EcsTaskRun]:
    """The catalog jobs run by ``pulumi up`` itself, one after the other in ``run_spec``'s order, after the catalog
    servers: what needs the catalog depends on the last (``Foundation.catalog_ready``). A job runs again when its
    task definition changes (a new revision: its image, its secrets, an identity's grants it renders)."""
    spec, ctx = foundation.spec, foundation.ctx
    network = foundation.gov.network
    waits: list[pulumi.Resource] = [part for part in foundation.parts.values() if part.layer is LAYER]
    runs: list[EcsTaskRun] = []
    order = [j for j in first if j in foundation.catalog_jobs]
    order += [n for n in spec.start_order() if n in foundation.catalog_jobs and n not in order]
    for job in order:
        run = EcsTaskRun(
            f"{spec.name}-{job}-run", description=f"catalog job {job}", cluster=foundation.cluster(LAYER).arn,
            task_definition=foundation.catalog_jobs[job].arn, subnets=network.private_subnet_ids,
            security_groups=[network.sg("catalogs").id], region=spec.aws.region, trigger=job,
            log_group=foundation.logs.names.get(job), tags=ctx.tags(LAYER, job, **{"lakehouse.kind": "job"}),
            opts=ctx.opts(LAYER, depends_on=[*waits, *runs[-1:]]))
        runs.append(run)
    foundation.catalog_ready = list(runs)
    return runs
