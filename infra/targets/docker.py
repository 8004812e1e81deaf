"""The docker target: every service a container on one network, from pinned images (pulumi-docker).

Each service's container is rendered from its service module's ``ContainerPlan``; this module only
turns plans into Docker resources: image, volumes, bind mounts, uploads, health check, memory
limit, restart policy, labels and the order the dependencies impose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pulumi
import pulumi_docker as docker

from infra.layers.base import layer_labels
from infra.secrets_config import render
from infra.services import flink, kafka, lakekeeper, polaris, postgres, rest_fixture, seaweedfs, trino
from infra.services.base import ContainerPlan, ServiceContext
from infra.spec import Layer, PlatformSpec, ServiceSpec
from infra.spec.loader import state_root
from infra.targets.base import DeployTarget

if TYPE_CHECKING:
    from infra.layers.base import LayerComponent


def flink_runtime_jar(spec: PlatformSpec) -> str:
    """Host path of Iceberg's Flink runtime jar in the artifact cache.

    `python -m infra.targets.native.artifacts fetch --only flink-runtime` puts it there (Maven
    Central, checksum-verified); the Flink containers mount it into /opt/flink/lib.
    """
    from infra.targets.native.artifacts import flink_runtime_coordinates, maven_cache_path

    return str(maven_cache_path(*flink_runtime_coordinates(spec.services[flink.JOBMANAGER].version, spec.engines.iceberg)))


# service name -> how to render its container plan
PLANS: dict[str, Callable[[ServiceContext], ContainerPlan]] = {
    seaweedfs.NAME: seaweedfs.container,
    seaweedfs.BUCKET_JOB: seaweedfs.bucket_job,
    postgres.NAME: postgres.container,
    rest_fixture.INIT_JOB: rest_fixture.init_job,
    rest_fixture.NAME: rest_fixture.container,
    polaris.BOOTSTRAP_JOB: polaris.bootstrap_job,
    polaris.NAME: polaris.container,
    lakekeeper.MIGRATE_JOB: lakekeeper.migrate_job,
    lakekeeper.NAME: lakekeeper.container,
    lakekeeper.LOOPBACK: lakekeeper.loopback,
    trino.NAME: trino.container,
    flink.JOBMANAGER: lambda ctx: flink.jobmanager(ctx, flink_runtime_jar(ctx.spec)),
    flink.TASKMANAGER: lambda ctx: flink.taskmanager(ctx, flink_runtime_jar(ctx.spec)),
    kafka.KAFKA: kafka.kafka,
    kafka.CONNECT: kafka.connect,
}


def healthcheck(service: ServiceSpec) -> docker.ContainerHealthcheckArgs:
    """Docker health check from the service's spec (its in-container command, or a generic probe)."""
    health = service.health
    assert health is not None
    if health.command:
        tests = health.command
    elif health.kind == "http":
        port = service.ports[health.port].internal
        tests = ["CMD-SHELL", f"curl -fsS http://127.0.0.1:{port}{health.path} >/dev/null"]
    else:
        port = service.ports[health.port].internal
        tests = ["CMD-SHELL", f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"]
    return docker.ContainerHealthcheckArgs(
        tests=tests,
        interval=f"{health.interval_s}s",
        timeout=f"{health.timeout_s}s",
        retries=health.retries,
        start_period=f"{health.start_period_s}s",
    )


class DockerTarget(DeployTarget):
    """Builds the lab on a Docker engine: network in governance, each service in its own layer."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]]):
        super().__init__(spec, secrets)
        self.network: docker.Network | None = None
        self.containers: dict[str, docker.Container] = {}
        self.state_dir = state_root() / pulumi.get_stack()

    def build_layer(self, component: "LayerComponent", spec: PlatformSpec) -> dict[str, Any]:
        if component.layer is Layer.GOVERNANCE:
            self.network = docker.Network(
                f"{spec.name}-network",
                name=f"{spec.name}-{pulumi.get_stack()}",
                labels=self._labels(Layer.GOVERNANCE),
                opts=pulumi.ResourceOptions(parent=component),
            )
        built = {}
        for name in spec.services_of(component.layer):
            container = self._service(component, name)
            built[name] = container.name
        out: dict[str, Any] = {"containers": built}
        if component.layer is Layer.GOVERNANCE and self.network is not None:
            out["network"] = self.network.name
        return out

    def _labels(self, layer: Layer, service: str | None = None) -> list[docker.ContainerLabelArgs]:
        return [docker.ContainerLabelArgs(label=k, value=v) for k, v in layer_labels(self.spec, layer, service).items()]

    def _service(self, component: "LayerComponent", name: str) -> docker.Container:
        spec = self.spec
        service = spec.services[name]
        plan = PLANS[name](ServiceContext(spec, name))
        child = pulumi.ResourceOptions(parent=component)
        labels = self._labels(service.layer, name)

        image = docker.RemoteImage(f"{name}-image", name=service.image, keep_locally=True, opts=child)
        mounts = []
        for suffix, target in plan.volumes.items():
            volume = docker.Volume(f"{name}-{suffix}", name=f"{spec.name}-{name}-{suffix}", labels=labels, opts=child)
            mounts.append(docker.ContainerMountArgs(type="volume", source=volume.name, target=target))
        for host_dir, target in plan.bind_mounts.items():
            # A bind mount, not a named volume: the init job hands it to the image's non-root user.
            mounts.append(docker.ContainerMountArgs(type="bind", source=str(self.state_dir / host_dir), target=target))
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
        depends = [self.containers[d] for d in service.depends_on if d in self.containers]
        is_job = service.kind == "job"
        args: dict[str, Any] = dict(
            name=f"{spec.name}-{name}",
            image=image.image_id,
            command=command or None,
            envs=envs or None,
            uploads=uploads or None,
            mounts=mounts or None,
            ports=ports or None,
            memory=service.memory_bytes // (1024 * 1024),
            labels=labels,
            user=plan.user,
            restart="no" if is_job else "unless-stopped",
            must_run=not is_job,
            attach=is_job,  # jobs: create waits until the job has run to completion
            healthcheck=None if is_job else healthcheck(service),
            wait=not is_job,  # servers: create waits until the container is healthy
            wait_timeout=None if is_job else service.health.ready_timeout_s,
        )
        if plan.network_mode_service:
            args["network_mode"] = self.containers[plan.network_mode_service].id.apply(lambda cid: f"container:{cid}")
        else:
            args["networks_advanced"] = [docker.ContainerNetworksAdvancedArgs(name=self.network.name, aliases=[name])]
        container = docker.Container(
            name,
            **args,
            opts=pulumi.ResourceOptions(parent=component, depends_on=depends),
        )
        self.containers[name] = container
        return container
