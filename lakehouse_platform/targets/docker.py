"""The docker target: every service a container on one network, from pinned images (pulumi-docker).

Each service's container is rendered from its definition's ``container`` renderer; this module only
turns plans into Docker resources: image, volumes, bind mounts, uploads, health check, memory
limit, restart policy, labels and the order the dependencies impose.

Two things pulumi-docker does not do for us, read in its upstream (kreuzwerker/terraform-provider-docker
v4.5.0, the submodule of pulumi-docker; internal/provider/resource_docker_container_funcs.go):

- ``mounts`` become the Engine's ``HostConfig.Mounts``, and the Engine refuses a bind whose source
  does not exist ("bind source path does not exist"); only the legacy ``Binds`` (``volumes`` with a
  ``host_path``, ``docker run -v``) create a missing host directory (Docker's bind-mount docs;
  moby/moby#21666 keeps that behaviour). Bind mounts are therefore ``volumes``: the daemon creates
  the source when it creates the container, on the host that runs the containers, and evaluating
  this program touches nothing on disk.
- with ``attach`` the provider waits for a job to stop but never reads its exit code (it only
  collects the logs); the next read records ``exit_code``. Every job is therefore gated: its exit
  code and log tail are checked in the program, a non-zero exit fails the deployment with the
  tail, and whatever depends on the job carries the gate, so it is never created after a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import pulumi
import pulumi_docker as docker

from lakehouse_platform.artifacts.artifact import ArtifactError
from lakehouse_platform.artifacts.stack import host_clients
from lakehouse_platform.layers import LayerComponent, layer_labels
from lakehouse_platform.model import Layer, PlatformSpec, ServiceSpec
from lakehouse_platform.paths import stack_state_dir
from lakehouse_platform.runtime.config import OperationsConfig
from lakehouse_platform.services.built_image import ImageBuildError
from lakehouse_platform.services.capabilities import DATABASE
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.operations_support import OPERATIONS_CONTEXT
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, StepHost
from lakehouse_platform.services.registry import registry
from lakehouse_platform.services.resolver import Resolver
from lakehouse_platform.services.secrets import render
from lakehouse_platform.targets import Built, TargetNotReady, declared_tables, dependencies, lab_images, published_ports
from lakehouse_platform.targets.deploy_steps import build_steps, export_steps
from lakehouse_platform.targets.lab_state import LabState
from lakehouse_platform.targets.state_owner import StateOwner, program_identity

LabelArgs = TypeVar("LabelArgs")

#: Lines of a failed job's log shown in the error.
LOG_TAIL_LINES = 30
#: Memory of the small root jobs the target adds (handing a bind mount to a service's user), MiB.
MIN_JOB_MEMORY_MB = 64
#: Label a dependent container carries for each job it waits for: the job's checked outcome.
AFTER_JOB_LABEL = "lakehouse.after-job."


class JobFailed(pulumi.RunError):
    """A job container exited non-zero (Pulumi prints the message alone, without a traceback)."""


def job_outcome(job: str, urn: str, exit_code: int | None, logs: str | None, secret_values: Sequence[str]) -> str:
    """``exit 0`` for a job that succeeded; otherwise ``JobFailed`` with its log tail, secrets masked."""
    if exit_code == 0:
        return "exit 0"
    lines = (logs or "").rstrip("\n").splitlines()[-LOG_TAIL_LINES:]
    tail = "\n".join(f"    {line}" for line in lines) or "    (no output)"
    for value in sorted({v for v in secret_values if v and len(v) >= 4}, key=len, reverse=True):
        tail = tail.replace(value, "[secret]")
    what = "did not report an exit code" if exit_code is None else f"exited {exit_code}"
    raise JobFailed(
        f"job {job} {what}; nothing that depends on it was started. Last {len(lines)} log lines:\n{tail}\n"
        f"Fix the cause, then run it again: pulumi up --replace '{urn}'"
    )


def go_duration(seconds: int) -> str:
    """Whole seconds as Go's ``time.Duration.String()`` writes them (``5s``, ``1m0s``, ``1h2m3s``).

    The provider reads a container's health check back from the engine in that form (upstream
    ``resource_docker_container_funcs.go``: ``Healthcheck.StartPeriod.String()``), so anything else
    (``60s``) shows as a change on every preview.
    """
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def healthcheck(service: ServiceSpec) -> docker.ContainerHealthcheckArgs:
    """Docker health check from the service's spec (its in-container command, or a generic probe)."""
    health = service.health
    assert health is not None
    if health.command:
        tests = health.command
    else:
        assert health.port is not None
        port = service.ports[health.port].internal
        tests = (["CMD-SHELL", f"curl -fsS http://127.0.0.1:{port}{health.path} >/dev/null"] if health.kind == "http"
                 else ["CMD-SHELL", f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"])
    return docker.ContainerHealthcheckArgs(
        tests=tests,
        interval=go_duration(health.interval_s),
        timeout=go_duration(health.timeout_s),
        retries=health.retries,
        start_period=go_duration(health.start_period_s),
    )


def restart_policy(service: ServiceSpec) -> str:
    """The engine's restart policy of a service's container: the lab's supervision of a crashed server."""
    return "no" if service.kind == "job" or service.restart.max_restarts == 0 else "unless-stopped"


class DockerTarget:
    """Builds the lab on a Docker engine: the network in governance, each service in its own layer."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]], resolver: Resolver,
                 check_ports: bool = True):
        self.spec = spec
        self.secrets = secrets
        stack = pulumi.get_stack()
        self.state_dir = stack_state_dir(stack, spec.state_dir)
        # Published ports held by anything but this stack's own containers stop the program here, before any
        # resource exists (the engine would find them only when it starts that container).
        problems = published_ports.conflicts(spec, stack) if check_ports and published_ports.engine_is_local() else []
        try:
            # Host files containers mount, and what the host's clients load (looked up, never fetched).
            self.artifacts = resolver.resolve(spec)
            # lab.images: built: service -> the build of its image (lakehouse lab images build): its
            # tag
            # computed from the cache, never built here.
            self.builds = lab_images.service_builds(spec, self.artifacts)
        except (ArtifactError, ImageBuildError) as exc:
            problems.append(str(exc))
        if problems:
            raise TargetNotReady("the lab cannot be built here:\n" + "\n".join(f"  - {p}" for p in problems))
        self.platform_images: dict[str, docker.Image] = {}  # image name -> the one build of it (operations)
        self.containers: dict[str, docker.Container] = {}
        self.job_gates: dict[str, pulumi.Output[str]] = {}  # job -> its checked outcome ("exit 0")

    def _labels(self, kind: Callable[..., LabelArgs], layer: Layer, service: str | None = None) -> list[LabelArgs]:
        """The layer's labels as the label args of one Docker resource type (container, network, volume)."""
        return [kind(label=k, value=v) for k, v in layer_labels(self.spec, layer, service).items()]

    def build(self, layers: Mapping[Layer, LayerComponent]) -> Built:
        built = Built()
        # Who owns the state directory (state_owner), then the directory: claimed before any container, removed after
        # all of them on destroy.
        owner = StateOwner(f"{self.spec.name}-state-owner", self.state_dir, program_identity(), self.spec.disposable,
                           opts=pulumi.ResourceOptions(parent=layers[Layer.STORAGE]))
        self.lab_state = LabState(f"{self.spec.name}-lab-state", str(self.state_dir), pulumi.get_stack(),
                                  opts=pulumi.ResourceOptions(parent=layers[Layer.STORAGE], depends_on=[owner]))
        network = docker.Network(
            f"{self.spec.name}-network",
            name=f"{self.spec.name}-{pulumi.get_stack()}",
            labels=self._labels(docker.NetworkLabelArgs, Layer.GOVERNANCE),
            # Fixed names: a replacement must delete the old one first (Docker refuses a second of the name).
            opts=pulumi.ResourceOptions(parent=layers[Layer.GOVERNANCE], delete_before_replace=True),
        )
        built.layer(Layer.GOVERNANCE)["network"] = network.name
        for name in self.spec.start_order():
            if registry()[name].docker.container is None:
                continue  # only deployment steps (the streaming job): built below
            service = self.spec.services[name]
            container = self._service(layers[service.layer], network, name)
            built.layer(service.layer).setdefault("containers", {})[name] = container.name
        # Every job's outcome is a stack output, so a failed job fails `up` even when nothing waits for it.
        built.outputs["job_outcomes"] = pulumi.Output.all(**self.job_gates) if self.job_gates else {}
        # Connectors, the CDC source, the streaming job: from this host through the published ports.
        made = build_steps(self.spec, self.secrets, layers, self.containers,
                           lambda name: StepHost(state_dir=self.state_dir, artifact=self.artifacts.services.get(name)))
        export_steps(self.spec, built, made)
        # Declared tables through the default catalog's published port, once it is healthy.
        catalog = default_catalog(self.spec)  # clients reach a gated catalog through its gate
        needed = (*catalog.path, *self.spec.services[catalog.name].depends_on)
        waits = [self.containers[n] for n in needed if n in self.containers]
        tables = declared_tables.declare_tables(self.spec, self.secrets, layers[Layer.ORCHESTRATION], waits)
        if tables:
            built.layer(Layer.ORCHESTRATION)["tables"] = {ident: t.result for ident, t in tables.items()}
        built.outputs["operations"] = self.operations().model_dump(mode="json")
        built.outputs["lab_images"] = self.lab_images()
        built.outputs["docker"] = self.docker_output(network)
        if (clients := host_clients(self.spec, self.artifacts)) is not None:
            built.outputs["clients"] = clients
        return built

    def docker_output(self, network: docker.Network) -> pulumi.Output[dict[str, Any]]:
        """Where the lab runs, for those who act on it through Docker (the probes, the operator's commands):
        each service's container (name, id, kind, memory budget, restart policy), the network, the state dir."""
        containers = {
            name: {"name": container.name, "id": container.id, "kind": self.spec.services[name].kind,
                   "memory_budget_bytes": self.spec.services[name].memory_bytes,
                   "restart": restart_policy(self.spec.services[name])}
            for name, container in self.containers.items() if name in self.spec.services
        }
        return pulumi.Output.from_input({"network": network.name, "state_dir": str(self.state_dir),
                                         "containers": containers})

    def lab_images(self) -> dict[str, dict[str, str]]:
        """What image each container runs and what it is: the pin, or (built) the artifact it was built from."""
        found = {}
        for name in self.containers:
            if name not in self.spec.services:
                continue  # a job the target added (a bind mount's owner): the service's own image
            service = self.spec.services[name]
            build = self.builds.get(name)
            if build is None:
                image = service.image
                found[name] = {"image": image, "kind": "platform" if image in self.platform_images else "upstream",
                               "version": service.version}
            else:
                version, notes = build.image.runs(build.artifact)
                # ``notes``: why what it runs is not the pin, where it is not (the version manifest's deviation).
                found[name] = {"image": build.tag, "kind": "built", "version": version, "pin": service.version,
                               "notes": "; ".join(notes)}
        return found

    def _platform_image(self, component: LayerComponent, name: str, dockerfile: str) -> docker.Image:
        """The platform's own image (the operations image), built once from the installed package, whoever needs it.

        The context is the package's directory as its .dockerignore admits it (only what the image needs), built
        with the classic builder, as the lab's build driver and the engine script build.
        """
        image = self.spec.services[name].image
        if image not in self.platform_images:
            args = lab_images.operations_args(self.spec, self.artifacts)
            self.platform_images[image] = docker.Image(
                component.child_name(f"{image.rsplit('/', 1)[-1].split(':')[0]}-image"), image_name=image,
                skip_push=True,
                build=docker.DockerBuildArgs(context=str(OPERATIONS_CONTEXT),
                                             dockerfile=str(OPERATIONS_CONTEXT / dockerfile),
                                             platform="linux/amd64", args=args,
                                             builder_version=docker.BuilderVersion.BUILDER_V1),
                opts=pulumi.ResourceOptions(parent=component),
            )
        return self.platform_images[image]

    def _bind_owner(self, component: LayerComponent, name: str, plan: ContainerPlan, image: pulumi.Input[str],
                    binds: list[docker.ContainerVolumeArgs], labels: list[docker.ContainerLabelArgs]) -> str:
        """A root job in the service's own image that hands ``plan.owned_binds`` to ``plan.user`` (the daemon
        creates a missing bind source as root), gated like every job; returns its name."""
        job = f"{name}-bind-owner"
        targets = " ".join(plan.owned_binds)
        container = docker.Container(
            component.child_name(job), name=f"{self.spec.name}-{job}", image=image, user="0:0",
            entrypoints=["sh", "-c"],
            command=[f"mkdir -p {targets} && chown {plan.user} {targets}"],
            volumes=[b for b in binds if b.container_path in plan.owned_binds],
            memory=MIN_JOB_MEMORY_MB, memory_swap=MIN_JOB_MEMORY_MB, labels=labels, restart="no", must_run=False,
            attach=True, logs=True,
            opts=pulumi.ResourceOptions(parent=component, delete_before_replace=True, depends_on=[
                self.lab_state, *dependencies(self.containers, name, self.spec.services[name].depends_on)]),
        )
        self.containers[job] = container
        self.job_gates[job] = self._gate(job, container)
        return job

    def _gate(self, name: str, container: docker.Container) -> pulumi.Output[str]:
        """The job's checked outcome: resolves to ``exit 0``, or fails the deployment (``job_outcome``)."""
        secret_values = list(self.secrets.values())
        checked = pulumi.Output.all(container.urn, container.exit_code, container.container_logs, *secret_values).apply(
            lambda values: job_outcome(name, values[0], values[1], values[2], values[3:]))
        return pulumi.Output.unsecret(checked)  # "exit 0" holds no secret (the inputs did)

    def operations(self) -> OperationsConfig:
        """The operations config as the host sees the lab (published ports, the bind-mounted state)."""
        from lakehouse_platform.services.operations_config import host_paths, operations_config

        # The host's PostgreSQL client tools where they are the server's own (built images run the native
        # artifact's major); upstream's server is another major than any client here: PATH's, if any.
        database = registry().provider(self.spec, DATABASE)
        postgres = self.artifacts.services.get(database) if database and self.spec.runs_native_artifacts else None
        return operations_config(self.spec, self.state_dir.name,
                                 host_paths(self.spec, str(self.state_dir), str(postgres.path) if postgres else None),
                                 Side.EXTERNAL)

    def _service(self, component: LayerComponent, network: docker.Network, name: str) -> docker.Container:
        spec = self.spec
        service = spec.services[name]
        definition = registry()[name]
        assert definition.docker.container is not None  # placement was validated with the spec
        host = ContainerHost(state_dir=self.state_dir, artifact=self.artifacts.services.get(name))
        plan = definition.docker.container(ServiceContext(spec, name), host)
        child = pulumi.ResourceOptions(parent=component)
        labels = self._labels(docker.ContainerLabelArgs, service.layer, name)

        image_ref: pulumi.Input[str]
        if name in self.builds:
            # lab.images: built: the image the build driver made from the native artifact (a local tag, kept).
            image_ref = docker.RemoteImage(component.child_name(f"{name}-image"), name=self.builds[name].tag,
                                           keep_locally=True, opts=child).image_id
        elif plan.build_dockerfile:
            # The platform's own image (the operations image), built here from this repository, once.
            image_ref = self._platform_image(component, name, plan.build_dockerfile).image_name
        else:
            image_ref = docker.RemoteImage(component.child_name(f"{name}-image"), name=service.image,
                                           keep_locally=True, opts=child).image_id
        mounts = []
        for suffix, target in plan.volumes.items():
            volume = docker.Volume(component.child_name(f"{name}-{suffix}"), name=f"{spec.name}-{name}-{suffix}",
                                   labels=self._labels(docker.VolumeLabelArgs, service.layer, name),
                                   opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                                       delete_before_replace=True)))
            mounts.append(docker.ContainerMountArgs(type="volume", source=volume.name, target=target))
        # A bind mount, not a named volume: the init job hands it to the image's non-root user. As a
        # Binds entry, so the daemon creates a missing source (the Mounts API refuses one; module docstring).
        binds = [docker.ContainerVolumeArgs(host_path=str(self.state_dir / host_dir), container_path=target)
                 for host_dir, target in plan.bind_mounts.items()]
        # An artifact from the cache (real files, never symlinks into it), read-only in the container.
        binds += [docker.ContainerVolumeArgs(host_path=host_path, container_path=target, read_only=True)
                  for host_path, target in plan.host_mounts.items()]
        uploads = [
            docker.ContainerUploadArgs(file=path, content=render(body, self.secrets))
            for path, body in plan.uploads.items()
        ] + [docker.ContainerUploadArgs(file=path, source=src) for path, src in plan.upload_sources.items()]
        envs = [render(f"{k}={v}", self.secrets) for k, v in {**service.env, **plan.env}.items()]
        command = [render(arg, self.secrets) for arg in (service.command or plan.command)]
        ports = [
            docker.ContainerPortArgs(internal=p.internal, external=p.external, ip="127.0.0.1")
            for p in service.ports.values() if p.external is not None and plan.network_mode_service is None
        ]
        is_job = service.kind == "job"
        health = service.health
        owner = self._bind_owner(component, name, plan, image_ref, binds, list(labels)) if plan.owned_binds else None
        # Waiting for a job means waiting for its success: the gate fails before this container exists.
        labels += [docker.ContainerLabelArgs(label=f"{AFTER_JOB_LABEL}{dep}", value=self.job_gates[dep])
                   for dep in [*service.depends_on, *([owner] if owner else [])] if dep in self.job_gates]
        args: dict[str, Any] = dict(
            name=f"{spec.name}-{name}",
            image=image_ref,
            command=command or None,
            entrypoints=plan.entrypoint,
            envs=envs or None,
            uploads=uploads or None,
            mounts=mounts or None,
            volumes=binds or None,
            ports=ports or None,
            memory=service.memory_bytes // (1024 * 1024),
            # Memory plus swap, set to the memory itself: no swap beyond the budget. Left unset, the engine
            # sets twice the memory and the provider, which does not compute the field, diffs it forever.
            memory_swap=service.memory_bytes // (1024 * 1024),
            labels=labels,
            user=plan.user,
            # The engine restarts a crashed server with its own growing delay; max_restarts 0 means never.
            restart=restart_policy(service),
            must_run=not is_job,
            attach=is_job,  # jobs: create waits until the job has run to completion
            logs=is_job,  # ... and keeps its output (container_logs), for the error when it fails
            healthcheck=None if is_job else healthcheck(service),
            wait=not is_job,  # servers: create waits until the container is healthy
            wait_timeout=None if is_job or health is None else health.ready_timeout_s,
        )
        if plan.network_mode_service:
            args["network_mode"] = self.containers[plan.network_mode_service].id.apply(lambda cid: f"container:{cid}")
        else:
            args["networks_advanced"] = [docker.ContainerNetworksAdvancedArgs(name=network.name, aliases=[name])]
        container = docker.Container(
            component.child_name(name), **args,
            opts=pulumi.ResourceOptions(
                parent=component, depends_on=[self.lab_state, *dependencies(self.containers, name, service.depends_on)]
                + ([self.containers[owner]] if owner else []),
                # Fixed names (a job's recovery is `pulumi up --replace <its URN>`): the old one goes first.
                delete_before_replace=True,
                # A job's output may echo configuration: encrypted in the state like any secret.
                additional_secret_outputs=["container_logs"] if is_job else None,
            ),
        )
        self.containers[name] = container
        if is_job:
            self.job_gates[name] = self._gate(name, container)
        return container
