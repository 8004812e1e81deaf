"""ECS Fargate building blocks shared by the catalog, compute and orchestration layers.

A service's ECS plan (its definition's ``ecs`` renderer) is rendered into an ECS container
definition here: plain settings go to ``environment``; every value that is a secret placeholder
goes to ``secrets`` as a Secrets Manager reference, so no secret is ever in a task definition's
environment; a command carrying a secret reads it from a task variable; config files travel in
the task definition and are written before the server is exec'd.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from lakehouse_platform.components.aws.common import log_group_name, to_json
from lakehouse_platform.components.aws.context import AwsComponent, AwsContext, RegistryImage
from lakehouse_platform.components.aws.logs import LogGroups
from lakehouse_platform.model import HealthCheckSpec, Layer, ServiceSpec
from lakehouse_platform.model.aws import FARGATE_SIZES
from lakehouse_platform.placeholders import PLATFORM_TOKEN, SECRET_TOKEN
from lakehouse_platform.services import ServiceContext, registry
from lakehouse_platform.services.operations_support import OPERATIONS_IMAGE
from lakehouse_platform.services.plans import EcsPlan
from lakehouse_platform.targets.aws.governance import GovernanceState, execution_role, grant


class SecretInEnvironment(ValueError):
    """A plan embeds a secret inside a larger environment value; on aws secrets are injected whole."""


@dataclass
class Container:
    """One container of a task definition, before it is rendered to ECS JSON."""

    name: str
    image: str
    memory_mib: int
    env: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    entry_point: list[str] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    health: HealthCheckSpec | None = None
    essential: bool = True
    log_source: str | None = None  # log group suffix; the container name when unset


def split_env(
    env: dict[str, str], secret_refs: dict[str, pulumi.Input[str]], where: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(environment, secrets) of an ECS container from a plan's env.

    A value that is exactly ``${secret:name}`` becomes ``{"name", "valueFrom": <Secrets Manager ARN>}``.
    A value that hides a secret inside a longer string cannot be injected safely and is refused.
    """
    environment, secrets = [], []
    for key, value in env.items():
        names = SECRET_TOKEN.findall(value)
        if not names:
            environment.append({"name": key, "value": value})
            continue
        if SECRET_TOKEN.fullmatch(value) is None:
            raise SecretInEnvironment(
                f"{where}: environment {key} embeds a secret inside a longer value; on aws a secret is injected "
                "whole from Secrets Manager, so pass it in a variable of its own"
            )
        if names[0] not in secret_refs:
            raise KeyError(f"{where}: no Secrets Manager secret for {names[0]!r}; "
                           f"known: {', '.join(sorted(secret_refs))}")
        secrets.append({"name": key, "valueFrom": secret_refs[names[0]]})
    return environment, secrets


def fill_platform_values(value: str, values: Mapping[str, pulumi.Input[str]], where: str) -> pulumi.Input[str]:
    """``value`` with each ``${platform:name}`` swapped for the output it stands for (an ARN)."""
    parts = PLATFORM_TOKEN.split(value)  # literal, name, literal, ...
    if len(parts) == 1:
        return value
    unknown = sorted({n for n in parts[1::2] if n not in values})
    if unknown:
        raise KeyError(f"{where}: unknown platform value(s) {', '.join(unknown)}; known: {', '.join(sorted(values))}")
    return pulumi.Output.concat(*[part if index % 2 == 0 else values[part] for index, part in enumerate(parts)])


def health_check(health: HealthCheckSpec, port: int | None) -> dict[str, Any]:
    """ECS container health check from the service's spec, clamped to what ECS accepts."""
    if health.command:
        command = list(health.command)
    elif health.kind == "http":
        command = ["CMD-SHELL", f"curl -fsS http://127.0.0.1:{port}{health.path} >/dev/null || exit 1"]
    else:
        command = ["CMD-SHELL", f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' || exit 1"]
    interval = min(max(health.interval_s, 5), 300)
    return {
        "command": command,
        "interval": interval,
        "timeout": min(max(health.timeout_s, 2), 60, interval),
        "retries": min(max(health.retries, 1), 10),
        "startPeriod": min(max(health.start_period_s, health.ready_timeout_s // 2), 300),
    }


def shell(script_lines: list[str]) -> tuple[list[str], list[str]]:
    """(entryPoint, command) running a shell script in place of the image's entrypoint."""
    return ["/bin/sh", "-c"], ["\n".join(script_lines)]


def files_then_exec(files: dict[str, str], exec_command: list[str],
                    secret_files: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """(entryPoint, command) writing config files (base64: any content is safe) then exec-ing the server.

    Fargate has no bind mounts of host files: configuration travels in the task definition. Files
    written this way must hold no secret; a file that *is* a secret (``secret_files``: path -> the task
    variable ECS fills from Secrets Manager) is written from that variable at start, so its value is
    never in the task definition.
    """
    lines = ["set -e"]
    for path, body in files.items():
        directory = path.rsplit("/", 1)[0]
        encoded = base64.b64encode(body.encode()).decode()
        lines.append(f"mkdir -p {shlex.quote(directory)} && echo {encoded} | base64 -d > {shlex.quote(path)}")
    for path, variable in (secret_files or {}).items():
        directory = path.rsplit("/", 1)[0]
        write = f'(umask 077 && printf \'%s\' "${variable}" > {shlex.quote(path)})'
        lines.append(f"mkdir -p {shlex.quote(directory)} && {write}")
    lines.append("exec " + " ".join(shlex.quote(arg) for arg in exec_command))
    return shell(lines)


def secrets_as_variables(command: list[str], exec_prefix: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """(entryPoint, command, env) for a plan whose command line carries secret placeholders.

    A task definition's command is plain text, so each ``${secret:name}`` becomes a shell variable
    filled from task ``secrets`` at run time: the command keeps the reference, never the value.
    """
    env: dict[str, str] = {}

    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        var = name.upper().replace("-", "_")
        env[var] = "${secret:" + name + "}"
        return "${" + var + "}"

    words = []
    for arg in [*exec_prefix, *command]:
        if SECRET_TOKEN.search(arg):
            words.append('"' + SECRET_TOKEN.sub(variable, arg.replace('"', '\\"')) + '"')
        else:
            words.append(shlex.quote(arg))
    entry_point, shell_command = shell(["exec " + " ".join(words)])
    return entry_point, shell_command, env


def secret_names(env: dict[str, str]) -> list[str]:
    """The secrets an environment references (placeholder names), sorted."""
    return sorted({name for value in env.values() for name in SECRET_TOKEN.findall(value)})


class ImageNotPushed(ValueError):
    """A container runs an image the platform builds itself, which this stack did not push."""


def image_reference(pushed: Mapping[str, RegistryImage], container: Container) -> pulumi.Input[str]:
    """What the task definition names: an image the stack pushed (``AwsContext.images``) by its digest, any other
    as given.

    The platform's own image under its local name exists only where it was built; a task naming it could never
    start, so that is refused here, naming the container."""
    if container.image in pushed:
        return pushed[container.image].reference
    if container.image == OPERATIONS_IMAGE:
        raise ImageNotPushed(f"{container.name} (aws): runs {OPERATIONS_IMAGE}, which the stack did not push (the "
                             "aws target pushes it for the parts it knows run it: "
                             "lakehouse_platform/targets/aws/images.py)")
    return container.image


def container_definition(
    ctx: AwsContext, container: Container, secret_refs: dict[str, pulumi.Input[str]]
) -> dict[str, Any]:
    """One ECS container definition (a mapping that may hold Outputs)."""
    spec = ctx.spec
    environment, secrets = split_env(container.env, secret_refs, f"{container.name} (aws)")
    for item in environment:
        item["value"] = fill_platform_values(item["value"], ctx.platform_values, f"{container.name} (aws)")
    definition: dict[str, Any] = {
        "name": container.name,
        "image": image_reference(ctx.images, container),
        "essential": container.essential,
        "memory": container.memory_mib,
        "environment": sorted(environment, key=lambda item: item["name"]),
        "secrets": sorted(secrets, key=lambda item: item["name"]),
        "portMappings": [{"containerPort": port, "protocol": "tcp"} for port in container.ports],
        "readonlyRootFilesystem": False,
        "logConfiguration": {
            "logDriver": "awslogs",
            "options": {
                "awslogs-group": log_group_name(spec, container.log_source or container.name),
                "awslogs-region": spec.aws.region,
                "awslogs-stream-prefix": container.name,
            },
        },
    }
    if container.command:
        definition["command"] = container.command
    if container.entry_point:
        definition["entryPoint"] = container.entry_point
    if container.health is not None:
        port = container.ports[0] if container.ports else None
        definition["healthCheck"] = health_check(container.health, port)
    return definition


def task_definition(
    ctx: AwsContext,
    layer: Layer,
    name: str,
    containers: list[Container],
    *,
    tags: dict[str, str],
    execution_role: aws.iam.Role,
    task_role: aws.iam.Role | None,
    secret_refs: dict[str, pulumi.Input[str]],
    cpu: int,
    memory: int,
    opts: pulumi.ResourceOptions | None = None,
) -> aws.ecs.TaskDefinition:
    """A Fargate task definition: awsvpc networking, x86_64 (the pinned images are multi-arch or amd64)."""
    definitions = [container_definition(ctx, c, secret_refs) for c in containers]
    pulled = [ctx.images[image] for image in dict.fromkeys(c.image for c in containers) if image in ctx.images]
    if pulled:
        # The execution role pulls the stack's own images (ECR: a token for the registry, then the layers).
        key = name.removeprefix(ctx.spec.name + "-")
        grant(ctx, f"{key}-execution-pulls-images", execution_role, [
            {"Sid": "RegistryToken", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
            {"Sid": "PullOwnImages", "Effect": "Allow",
             "Action": ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
             "Resource": [image.repository_arn for image in pulled]}])
    return aws.ecs.TaskDefinition(
        name,
        family=f"{ctx.spec.name}-{pulumi.get_stack()}-{name.removeprefix(ctx.spec.name + '-')}",
        requires_compatibilities=["FARGATE"],
        network_mode="awsvpc",
        cpu=str(cpu),
        memory=str(memory),
        execution_role_arn=execution_role.arn,
        task_role_arn=task_role.arn if task_role is not None else None,
        container_definitions=to_json(definitions),
        runtime_platform={"operating_system_family": "LINUX", "cpu_architecture": "X86_64"},
        tags=tags,
        opts=opts or ctx.opts(layer),
    )


class FargateServiceConfig(BaseModel):
    """What makes one long-running Fargate service: its containers, size, count, network and rollout."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    container: Container = Field(description="The main container; the service and task are named after it.")
    sidecars: tuple[Container, ...] = Field(
        default=(), description="Containers in the same task (they share its network: localhost reaches the main one).")
    cpu: int = Field(description="Fargate CPU units of the task.", gt=0)
    memory: int = Field(description="Fargate memory of the task, MiB.", gt=0)
    desired_count: int = Field(description="Tasks the service keeps running.", ge=0)
    min_healthy_percent: int = Field(description="Share of tasks a deployment keeps running.", ge=0, le=100)
    security_group: Any = Field(description="The security group (id, an Output) of its tasks.")
    task_role: Any = Field(default=None, description="The task's own IAM role, or None (no AWS rights).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags of the task definition and service.")
    service_args: dict[str, Any] = Field(
        default_factory=dict, description="More arguments of aws.ecs.Service (load balancers, registries, grace).")

    @field_validator("memory")
    @classmethod
    def _fits_the_cpu(cls, memory: int, info: ValidationInfo) -> int:
        cpu = info.data.get("cpu")
        if cpu in FARGATE_SIZES and memory not in FARGATE_SIZES[cpu]:
            raise ValueError(f"{memory} MiB is no Fargate size for {cpu} CPU units; allowed: "
                             f"{', '.join(map(str, FARGATE_SIZES[cpu]))}")
        return memory


class FargateService(AwsComponent):
    """One long-running Fargate service: its execution role (governance's), task definition and ECS service.

    The service waits for its own log groups (created first, by the observability layer's log groups).
    """

    def __init__(self, config: FargateServiceConfig, ctx: AwsContext, layer: Layer, gov: GovernanceState,
                 logs: LogGroups, cluster: aws.ecs.Cluster, secret_refs: Mapping[str, pulumi.Input[str]], *,
                 depends_on: list[pulumi.Resource] | None = None, parent: pulumi.Resource | None = None) -> None:
        spec = ctx.spec
        name = config.container.name
        super().__init__("platform:aws:FargateService", f"{spec.name}-{name}", ctx, layer, parent)
        containers = [config.container, *config.sidecars]
        sources = [c.log_source or c.name for c in containers]
        secrets_used = sorted({s for c in containers for s in secret_names(c.env)})
        execution = execution_role(ctx, gov, name, sources, secrets_used, dict(secret_refs))
        self.task_definition = task_definition(
            ctx, layer, f"{spec.name}-{name}", containers, tags=config.tags, execution_role=execution,
            task_role=config.task_role, secret_refs=dict(secret_refs), cpu=config.cpu, memory=config.memory,
            opts=self.child_opts(),
        )
        self.service = aws.ecs.Service(
            f"{spec.name}-{name}",
            name=name,
            cluster=cluster.arn,
            task_definition=self.task_definition.arn,
            desired_count=config.desired_count,
            launch_type="FARGATE",
            platform_version="LATEST",
            network_configuration={"subnets": gov.network.private_subnet_ids,
                                   "security_groups": [config.security_group], "assign_public_ip": False},
            deployment_circuit_breaker={"enable": True, "rollback": True},
            deployment_minimum_healthy_percent=config.min_healthy_percent,
            deployment_maximum_percent=200,
            propagate_tags="SERVICE",
            enable_ecs_managed_tags=True,
            wait_for_steady_state=False,
            tags=config.tags,
            opts=self.child_opts(depends_on=[*(logs.group(source) for source in sources), *(depends_on or [])]),
            **config.service_args,
        )
        self.register_outputs({"service": self.service.name, "task_definition": self.task_definition.arn})


def cluster(ctx: AwsContext, layer: Layer) -> aws.ecs.Cluster:
    """The ECS cluster of one layer (catalog services, engines), with Container Insights."""
    spec = ctx.spec
    return aws.ecs.Cluster(
        f"{spec.name}-{layer.value}", name=f"{spec.name}-{pulumi.get_stack()}-{layer.value}",
        settings=[{"name": "containerInsights", "value": "enabled"}], tags=ctx.tags(layer),
        opts=ctx.opts(layer),
    )


def service_memory_mib(service: ServiceSpec) -> int:
    """A service's memory budget in MiB (the container's hard limit)."""
    return max(service.memory_bytes // (1024 * 1024), 64)


def container_of(ctx: AwsContext, name: str, plan: EcsPlan | None = None, *, memory_mib: int | None = None,
                 ports: list[int] | None = None, with_health: bool = True, log_source: str | None = None) -> Container:
    """The ECS container of one service or job, from its definition's ``ecs`` plan (or ``plan``).

    Files are written before the command is exec'd; a command that carries a secret reads it from a
    task variable (never from the task definition's text).
    """
    spec = ctx.spec
    service = spec.services[name]
    if plan is None:
        renderer = registry()[name].ecs
        assert renderer is not None, f"{name} has no ECS renderer (placement is validated with the spec)"
        plan = renderer(ServiceContext(spec, name))
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
