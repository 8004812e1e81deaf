"""ECS Fargate building blocks: containers, task definitions, services (``FargateService``), clusters.

A ``Container`` (its environment may hold ``${secret:name}`` placeholders) is rendered into an ECS container
definition here: plain settings go to ``environment``; every value that is a secret placeholder goes to
``secrets`` as a Secrets Manager reference, so no secret is ever in a task definition's environment; a command
carrying a secret reads it from a task variable (``secrets_as_variables``); config files travel in the task
definition and are written before the server is exec'd (``files_then_exec``).
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.common import log_group_name, to_json
from lakehouse_platform.components.aws.context import AwsComponent, AwsContext, RegistryImage
from lakehouse_platform.components.aws.iam import GovernanceState, execution_role, grant
from lakehouse_platform.components.aws.logs import LogGroups
from lakehouse_platform.model import HealthCheckSpec, Layer, ServiceSpec
from lakehouse_platform.model.aws import FARGATE_SIZES
from lakehouse_platform.placeholders import PLATFORM_TOKEN, SECRET_TOKEN


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


def image_reference(container: Container, pushed: Mapping[str, RegistryImage],
                    built: frozenset[str]) -> pulumi.Input[str]:
    """What the task definition names: an image the stack pushed (``AwsContext.images``) by its digest, any other
    as given.

    An image the platform builds itself (``built``: ``AwsContext.built_images``) exists only where it was built; a
    task naming it by its local name could never start, so that is refused here, naming the container."""
    if container.image in pushed:
        return pushed[container.image].reference
    if container.image in built:
        raise ImageNotPushed(f"{container.name} (aws): runs {container.image}, which the stack did not push (the "
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
        "image": image_reference(container, ctx.images, ctx.built_images),
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


@dataclass(frozen=True)
class FargateServiceArgs:
    """What makes one long-running Fargate service: its containers, size, count, network, rollout, and where it runs
    (the cluster, governance's key and secrets, its log groups)."""

    ctx: AwsContext
    layer: Layer
    governance: GovernanceState
    logs: LogGroups
    cluster: aws.ecs.Cluster
    container: Container  # the main container; the service and task are named after it
    cpu: int  # Fargate CPU units of the task
    memory: int  # Fargate memory of the task, MiB
    desired_count: int  # tasks the service keeps running
    min_healthy_percent: int  # share of tasks a deployment keeps running
    security_group: pulumi.Input[str]  # the security group (id) of its tasks
    secret_refs: Mapping[str, pulumi.Input[str]]  # secret placeholder name -> its Secrets Manager reference
    #: Containers in the same task (they share its network: localhost reaches the main one).
    sidecars: tuple[Container, ...] = ()
    task_role: aws.iam.Role | None = None  # the task's own IAM role, or None (no AWS rights)
    tags: Mapping[str, str] = field(default_factory=dict)  # of the task definition and the service
    #: More arguments of aws.ecs.Service (load balancers, registries, grace).
    service_args: Mapping[str, Any] = field(default_factory=dict)
    depends_on: tuple[pulumi.Resource, ...] = ()

    def __post_init__(self) -> None:
        if self.cpu not in FARGATE_SIZES:
            raise ValueError(f"{self.container.name}: {self.cpu} CPU units is no Fargate size; allowed: "
                             f"{', '.join(map(str, FARGATE_SIZES))}")
        if self.memory not in FARGATE_SIZES[self.cpu]:
            raise ValueError(f"{self.memory} MiB is no Fargate size for {self.cpu} CPU units; allowed: "
                             f"{', '.join(map(str, FARGATE_SIZES[self.cpu]))}")
        if self.desired_count < 0 or not 0 <= self.min_healthy_percent <= 100:
            raise ValueError(f"{self.container.name}: desired_count {self.desired_count} and min_healthy_percent "
                             f"{self.min_healthy_percent}: a count of at least 0, a share from 0 to 100")


class FargateService(AwsComponent):
    """One long-running Fargate service: its execution role (governance's), task definition and ECS service.

    The service waits for its own log groups (created first, by the observability layer's log groups).
    """

    def __init__(self, name: str, args: FargateServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        ctx = args.ctx
        spec = ctx.spec
        family = args.container.name
        super().__init__("platform:aws:FargateService", name, ctx, args.layer, opts)
        containers = [args.container, *args.sidecars]
        sources = [c.log_source or c.name for c in containers]
        secrets_used = sorted({s for c in containers for s in secret_names(c.env)})
        secret_refs = dict(args.secret_refs)
        execution = execution_role(ctx, args.governance, family, sources, secrets_used, secret_refs)
        self.task_definition = task_definition(
            ctx, args.layer, f"{spec.name}-{family}", containers, tags=dict(args.tags), execution_role=execution,
            task_role=args.task_role, secret_refs=secret_refs, cpu=args.cpu, memory=args.memory,
            opts=self.child_opts(),
        )
        self.service = aws.ecs.Service(
            f"{spec.name}-{family}",
            name=family,
            cluster=args.cluster.arn,
            task_definition=self.task_definition.arn,
            desired_count=args.desired_count,
            launch_type="FARGATE",
            platform_version="LATEST",
            network_configuration={"subnets": args.governance.network.private_subnet_ids,
                                   "security_groups": [args.security_group], "assign_public_ip": False},
            deployment_circuit_breaker={"enable": True, "rollback": True},
            deployment_minimum_healthy_percent=args.min_healthy_percent,
            deployment_maximum_percent=200,
            propagate_tags="SERVICE",
            enable_ecs_managed_tags=True,
            wait_for_steady_state=False,
            tags=dict(args.tags),
            opts=self.child_opts(depends_on=[*(args.logs.group(source) for source in sources), *args.depends_on]),
            **args.service_args,
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
