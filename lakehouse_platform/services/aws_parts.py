"""What a service's aws half stands on: the ``Foundation`` the aws target hands it, the ``PartComponent`` it builds,
its container from its ECS plan.

A service package declares its aws parts (``definition.AwsPart``: its managed or ECS counterpart, a
``PartComponent``), each built by ``build(foundation)``. The aws target makes the shared pieces first (governance,
the log groups, the warehouse, the clusters, the code bucket, the catalogs' load balancer, the alarm topic) and
hands them over as the ``Foundation``, then builds the parts layer by layer; a part reaches a part built before it
by the capability its service provides (``Foundation.provider``), never by its name. A part keeps what it made as
its attributes (its catalog jobs, the secret references it adds): the target reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.alarms import Alarm, Alarms
from lakehouse_platform.components.aws.common import physical_name
from lakehouse_platform.components.aws.context import AwsComponent, AwsContext
from lakehouse_platform.components.aws.ecs import Container, files_then_exec, secrets_as_variables, service_memory_mib
from lakehouse_platform.components.aws.iam import GovernanceState
from lakehouse_platform.components.aws.logs import LogGroups
from lakehouse_platform.components.aws.network import Network
from lakehouse_platform.components.aws.storage import SecureBucket
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.placeholders import SECRET_TOKEN
from lakehouse_platform.services.capabilities import Capability
from lakehouse_platform.services.plans import EcsPlan

Part = TypeVar("Part", bound="PartComponent")


class PartComponent(AwsComponent):
    """A service's aws part: a component of its layer, with what it adds to the outputs and its catalog jobs."""

    #: The catalog jobs that run before every other (the database's init), when the part has any.
    first_jobs: tuple[str, ...] = ()

    def __init__(self, type_token: str, name: str, ctx: AwsContext, layer: Layer,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(type_token, name, ctx, layer, opts)
        #: Its one-off jobs of the catalog's setup, by name (``pulumi up`` runs them, in order, after the catalog
        #: layer).
        self.catalog_jobs: dict[str, aws.ecs.TaskDefinition] = {}
        #: Secret references it makes that later parts' tasks read (the RDS-managed database password).
        self.secret_refs: dict[str, pulumi.Input[str]] = {}

    def layer_outputs(self) -> dict[str, Any]:
        """What the part adds to its layer component's outputs."""
        return {}

    def stack_outputs(self) -> dict[str, Any]:
        """What the part adds to the stack's outputs."""
        return {}


class CatalogLoadBalancer(AwsComponent):
    """The internal load balancer every catalog server sits behind, with its one listener (a 404 by default)."""

    def __init__(self, ctx: AwsContext, network: Network, port: int) -> None:
        spec = ctx.spec
        super().__init__("platform:aws:CatalogLoadBalancer", f"{spec.name}-catalogs", ctx, Layer.CATALOG)
        tags = ctx.tags(Layer.CATALOG)
        self.balancer = aws.lb.LoadBalancer(
            f"{spec.name}-catalogs", name=physical_name(spec, "catalogs"), internal=True,
            load_balancer_type="application", security_groups=[network.sg("lb").id],
            subnets=network.private_subnet_ids, drop_invalid_header_fields=True, idle_timeout=120,
            tags=tags, opts=self.child_opts(),
        )
        self.listener = aws.lb.Listener(
            f"{spec.name}-catalogs-http", load_balancer_arn=self.balancer.arn,
            port=port, protocol="HTTP",
            default_actions=[{"type": "fixed-response", "fixed_response": {
                "content_type": "text/plain", "status_code": "404",
                "message_body": f"no catalog at this host; use <catalog>.{spec.name}.internal"}}],
            tags=tags, opts=self.child_opts(),
        )
        self.register_outputs({"dns_name": self.balancer.dns_name})

    def watch(self, alarm: Alarm) -> None:
        """The load balancer's own 5xx: no target could answer."""
        alarm("catalogs-lb-5xx", "the catalogs' load balancer answered 5xx itself (no target could answer)",
              namespace="AWS/ApplicationELB", metric_name="HTTPCode_ELB_5XX_Count",
              dimensions={"LoadBalancer": self.balancer.arn_suffix}, statistic="Sum", period=300,
              evaluation_periods=1, threshold=0, comparison_operator="GreaterThanThreshold",
              treat_missing_data="notBreaching")


@dataclass
class Foundation:
    """The shared aws pieces every part stands on, and the parts built so far (by part name)."""

    ctx: AwsContext
    gov: GovernanceState
    logs: LogGroups
    warehouse: SecureBucket
    #: The ECS cluster of each layer whose parts run tasks (catalog and compute always).
    clusters: Mapping[Layer, aws.ecs.Cluster]
    #: Where every alarm and alert goes: the observability layer's topic (a part that watches something adds its
    #: alarms to it through ``watch(alarm)``).
    alarms: Alarms
    #: The services that offer a capability, in registry order (``Registry.providers``): how ``provider`` finds a part.
    providers: Callable[[Capability], tuple[str, ...]]
    #: secret placeholder name -> what an ECS ``secrets`` entry's valueFrom is: governance's, and what the parts
    #: built so far made (``PartComponent.secret_refs``).
    secret_refs: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    parts: dict[str, PartComponent] = field(default_factory=dict)
    #: The compute layer's private bucket of uploaded code, when a part uploads code.
    code: SecureBucket | None = None
    #: The catalogs' internal load balancer with its listener (when a catalog runs as an ECS service).
    catalogs: CatalogLoadBalancer | None = None
    #: The catalog's setup having run (``pulumi up`` runs its jobs after the catalog layer): what needs the catalog
    #: (declared tables, the Flink application, the connectors) depends on these (empty where it needs no job).
    catalog_ready: list[pulumi.Resource] = field(default_factory=list)

    @property
    def spec(self) -> PlatformSpec:
        return self.ctx.spec

    def cluster(self, layer: Layer) -> aws.ecs.Cluster:
        """The ECS cluster of one layer (a part that runs tasks in its own layer says so: ``AwsPart.cluster``)."""
        if layer not in self.clusters:
            raise KeyError(f"no ECS cluster in the {layer.value} layer: its part declares AwsPart(cluster=True); "
                           f"clusters: {', '.join(sorted(lay.value for lay in self.clusters))}")
        return self.clusters[layer]

    def code_bucket(self) -> SecureBucket:
        """The compute layer's private bucket of uploaded code (a part that uploads declares ``uploads_code``)."""
        if self.code is None:
            raise KeyError("no code bucket in this stack: a part that uploads code declares AwsPart(uploads_code=True)")
        return self.code

    def provider(self, capability: Capability) -> Any | None:
        """The built part of the service that provides ``capability`` (its protocol:
        ``lakehouse_platform.services.capabilities``), if the stack has one: how a part reaches another service's
        part without naming it."""
        return next((self.parts[n] for n in self.providers(capability) if n in self.parts), None)

    def part(self, kind: type[Part]) -> Part | None:
        """The built part of this type, if the stack has one."""
        found = [p for p in self.parts.values() if isinstance(p, kind)]
        return found[0] if found else None


def container_of(ctx: AwsContext, name: str, plan: EcsPlan, *, memory_mib: int | None = None,
                 ports: list[int] | None = None, with_health: bool = True, log_source: str | None = None) -> Container:
    """The ECS container of one service or job from its ECS plan, with its spec's image, memory, env and ports.

    Files are written before the command is exec'd; a command that carries a secret reads it from a
    task variable (never from the task definition's text).
    """
    spec = ctx.spec
    service = spec.services[name]
    env = {**service.env, **plan.env}
    command = list(service.command or plan.command)
    entry_point = list(plan.entry_point)
    if plan.files:
        plain = {path: body for path, body in plan.files.items() if SECRET_TOKEN.fullmatch(body) is None}
        secret_files: dict[str, str] = {}
        for path, body in plan.files.items():
            if path not in plain:
                variable = "FILE_" + SECRET_TOKEN.fullmatch(body).group(1).upper().replace("-", "_")  # type: ignore[union-attr]
                secret_files[path] = variable
                env[variable] = body
        entry_point, command = files_then_exec(plain, [*entry_point, *command], secret_files)
    elif any(SECRET_TOKEN.search(arg) for arg in command):
        entry_point, command, secret_env = secrets_as_variables(command, entry_point)
        env.update(secret_env)
    if ports is None:
        http = service.ports.get("http")
        ports = sorted({p.internal for p in service.ports.values()}, key=lambda p: http is None or p != http.internal)
    return Container(
        name=name, image=service.image, memory_mib=memory_mib or service_memory_mib(service), env=env,
        command=command, entry_point=entry_point, ports=ports,
        health=service.health if with_health and service.kind == "server" else None, log_source=log_source,
    )
