"""The docker target: every service a container on one network, from pinned images (pulumi-docker).

Each service's container is rendered from its definition's ``container`` renderer; this module only
turns plans into Docker resources: image, volumes, bind mounts, uploads, health check, memory
limit, restart policy, labels and the order the dependencies impose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pulumi
import pulumi_docker as docker

from infra.artifacts.resolver import Resolver
from infra.layers import LayerComponent, layer_labels
from infra.paths import PROJECT_ROOT, state_root
from infra.secrets import render
from infra.services import ServiceContext, registry
from infra.services.base import ContainerHost
from infra.spec import Layer, PlatformSpec, ServiceSpec
from infra.targets import Built, dependencies

LabelArgs = TypeVar("LabelArgs")


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
        interval=f"{health.interval_s}s",
        timeout=f"{health.timeout_s}s",
        retries=health.retries,
        start_period=f"{health.start_period_s}s",
    )


class DockerTarget:
    """Builds the lab on a Docker engine: the network in governance, each service in its own layer."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]], resolver: Resolver):
        self.spec = spec
        self.secrets = secrets
        self.state_dir = state_root() / pulumi.get_stack()
        self.artifacts = resolver.resolve(spec)  # host files containers mount (looked up, never fetched)
        self.containers: dict[str, docker.Container] = {}

    def _labels(self, kind: Callable[..., LabelArgs], layer: Layer, service: str | None = None) -> list[LabelArgs]:
        """The layer's labels as the label args of one Docker resource type (container, network, volume)."""
        return [kind(label=k, value=v) for k, v in layer_labels(self.spec, layer, service).items()]

    def build(self, layers: Mapping[Layer, LayerComponent]) -> Built:
        built = Built()
        network = docker.Network(
            f"{self.spec.name}-network",
            name=f"{self.spec.name}-{pulumi.get_stack()}",
            labels=self._labels(docker.NetworkLabelArgs, Layer.GOVERNANCE),
            opts=pulumi.ResourceOptions(parent=layers[Layer.GOVERNANCE]),
        )
        built.layer(Layer.GOVERNANCE)["network"] = network.name
        for name in self.spec.start_order():
            service = self.spec.services[name]
            container = self._service(layers[service.layer], network, name)
            built.layer(service.layer).setdefault("containers", {})[name] = container.name
        return built

    def _service(self, component: LayerComponent, network: docker.Network, name: str) -> docker.Container:
        spec = self.spec
        service = spec.services[name]
        definition = registry()[name]
        assert definition.container is not None  # placement was validated with the spec
        host = ContainerHost(state_dir=self.state_dir, artifact=self.artifacts.services.get(name))
        plan = definition.container(ServiceContext(spec, name), host)
        child = pulumi.ResourceOptions(parent=component)
        labels = self._labels(docker.ContainerLabelArgs, service.layer, name)

        image_ref: pulumi.Input[str]
        if plan.build_dockerfile:
            # The platform's own image (e.g. the operations image), built here from this repository.
            built = docker.Image(
                f"{name}-image", image_name=service.image, skip_push=True,
                build=docker.DockerBuildArgs(context=str(PROJECT_ROOT),
                                             dockerfile=str(PROJECT_ROOT / plan.build_dockerfile),
                                             platform="linux/amd64"),
                opts=child,
            )
            image_ref = built.image_name
        else:
            image_ref = docker.RemoteImage(f"{name}-image", name=service.image, keep_locally=True, opts=child).image_id
        mounts = []
        for suffix, target in plan.volumes.items():
            volume = docker.Volume(f"{name}-{suffix}", name=f"{spec.name}-{name}-{suffix}",
                                   labels=self._labels(docker.VolumeLabelArgs, service.layer, name), opts=child)
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
        is_job = service.kind == "job"
        health = service.health
        args: dict[str, Any] = dict(
            name=f"{spec.name}-{name}",
            image=image_ref,
            command=command or None,
            entrypoints=plan.entrypoint,
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
            wait_timeout=None if is_job or health is None else health.ready_timeout_s,
        )
        if plan.network_mode_service:
            args["network_mode"] = self.containers[plan.network_mode_service].id.apply(lambda cid: f"container:{cid}")
        else:
            args["networks_advanced"] = [docker.ContainerNetworksAdvancedArgs(name=network.name, aliases=[name])]
        container = docker.Container(
            name, **args,
            opts=pulumi.ResourceOptions(parent=component, depends_on=dependencies(self.containers, name,
                                                                                  service.depends_on)),
        )
        self.containers[name] = container
        return container
