"""What a docker (lab) stack needs on this host before ``pulumi up`` or ``destroy``: an engine, the provider, images.

``make up STACK=lab`` (``lakehouse up --stack lab``) runs, in order: ``engine`` (the engine
at
``DOCKER_HOST`` answers ``docker info``; where ``DOCKER_HOST`` is unset and the project's own engine runs, that
one), ``ensure_provider`` (the pulumi-docker provider plugin of the Python SDK's version in the project's Pulumi
home, installed from the plugin registry where it is reachable; else a message saying how to install a binary),
``build_images`` (with ``lab.images: built``, every service image the engine lacks, from the native artifacts;
the operations image is the program's own ``docker.Image``), then ``pulumi up``. ``make down STACK=lab`` needs the
engine and the provider too. A plain ``pulumi up --stack lab`` with one's own Pulumi CLI and backend needs none of
this module: only an engine and the plugin.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from lakehouse_platform.config import ConfigError, load_stack
from lakehouse_platform.control.services import docker_client, point_at_engine
from lakehouse_platform.model import PlatformSpec, Target

#: The provider plugin's name, as `pulumi plugin install resource <name>` takes it.
PROVIDER = "docker"


class NotReady(RuntimeError):
    """This host cannot deploy the docker stack yet; the message says what to do."""


def is_docker(stack: str) -> bool:
    """Whether the stack's target is docker (the lab); a stack file that does not load is not."""
    try:
        return load_stack(stack).target is Target.DOCKER
    except ConfigError:
        return False


def engine() -> str:
    """The engine answers (``docker info`` through the SDK): ``Docker <version> at <host>``; else ``NotReady``."""
    host = point_at_engine()
    try:
        info = docker_client(timeout_s=30).info()
    except Exception as exc:  # noqa: BLE001 - the SDK raises several kinds for "no engine"
        raise NotReady(f"no Docker engine answers at DOCKER_HOST={host} ({type(exc).__name__}: {str(exc)[:200]}). "
                       "Start one: `make engine` (the project's own dockerd where none runs), then point the shell "
                       "at it: eval \"$(lakehouse engine env)\"") from None
    return f"Docker {info.get('ServerVersion', '?')} at {host}"


def provider_version() -> str:
    """The pulumi-docker version the program's SDK asks the engine for (pyproject's pin, as installed)."""
    return importlib.metadata.version("pulumi-docker")


def ensure_provider(workspace: auto.LocalWorkspace) -> str:
    """The provider plugin in the workspace's Pulumi home: present, or installed from the plugin registry."""
    version = provider_version()
    installed = [p for p in workspace.list_plugins() if p.name == PROVIDER and p.kind == "resource"]
    if any(p.version == version for p in installed):
        return f"pulumi-resource-{PROVIDER} {version} installed"
    try:
        workspace.install_plugin(PROVIDER, f"v{version}")
    except auto.CommandError as exc:
        home = (workspace.env_vars or {}).get("PULUMI_HOME", "~/.pulumi")
        others = ", ".join(str(p.version) for p in installed) or "none"
        raise NotReady(
            f"the Pulumi docker provider plugin {version} (the pulumi-docker SDK's version) is not in {home} "
            f"(installed: {others}), and `pulumi plugin install resource {PROVIDER} {version}` failed: the plugin "
            f"registry is not reachable from here ({str(exc).strip().splitlines()[-1][:200]}). Install a provider "
            f"binary you have: {install_hint(workspace, version)}") from None
    return f"pulumi-resource-{PROVIDER} {version} installed from the plugin registry"


def install_hint(workspace: auto.LocalWorkspace, version: str) -> str:
    """The command that installs a provider binary into the workspace's Pulumi home, whole as it is: the CLI the
    workspace runs by its path and the home by name (nothing to source first: scripts/pulumi-env.sh needs the
    project's CLI, which the engine-only path never builds)."""
    home = ((workspace.env_vars or {}).get("PULUMI_HOME") or os.environ.get("PULUMI_HOME")
            or str(Path.home() / ".pulumi"))  # the CLI's own default where neither the workspace nor you set one
    cli = workspace.pulumi_command.command if workspace.pulumi_command is not None else "pulumi"
    return (f"PULUMI_HOME={shlex.quote(home)} {shlex.quote(cli)} plugin install resource {PROVIDER} {version} "
            "--file <path to pulumi-resource-docker>")


def build_images(spec: PlatformSpec, say: Callable[[str], None] = print) -> dict[str, float]:
    """With ``lab.images: built``: every service image the engine lacks (``lakehouse lab images
    build``, which skips a tag it has); seconds per image built. The operations image is left to the
    program (``docker.Image``)."""
    from lakehouse_platform.artifacts.artifact import ArtifactError
    from lakehouse_platform.control import image_builds
    from lakehouse_platform.services.built_image import ImageBuildError
    from lakehouse_platform.services.resolver import CacheResolver

    if not spec.lab_built:
        return {}
    try:
        return image_builds.build_all(spec, CacheResolver().resolve(spec), docker_client(), say=say, operations=False)
    except (ImageBuildError, ArtifactError) as exc:
        raise NotReady(str(exc)) from None


def build_leftovers(client: Any, image: str) -> list[Any]:
    """The classic builder's intermediate containers of ``image``: not running, made from a layer of its history.

    pulumi-docker builds the platform's own image (``docker.Image``, classic builder) without asking the engine to
    remove them (its provider/image.go sets no ``Remove`` in ``ImageBuildOptions``), so each build step leaves one
    behind, through ``destroy`` too. A container of the image itself, or one that carries the platform's labels (a
    stack's own, stopped), is never one of them.
    """
    errors = importlib.import_module("docker.errors")
    try:
        layers = [entry["Id"] for entry in client.api.history(image)]
    except errors.ImageNotFound:
        return []
    intermediate = {layer for layer in layers[1:] if layer.startswith("sha256:")}
    return [c for c in client.containers.list(all=True, filters={"status": ["created", "exited"]})
            if c.attrs.get("Image") in intermediate and not any(k.startswith("lakehouse.") for k in c.labels)]


def remove_build_leftovers(spec: PlatformSpec, client: Any = None) -> list[str]:
    """Remove what building the stack's images left in the engine (``build_leftovers`` of each service's image: the
    platform's own, which the program builds; a pulled image has no local layers); the names removed."""

    client = client or docker_client()
    images = {service.image for service in spec.enabled_services().values()}
    removed = []
    for image in sorted(images):
        for container in build_leftovers(client, image):
            container.remove(v=True)
            removed.append(container.name)
    return removed


def prepare(stack: str, workspace: auto.LocalWorkspace, say: Callable[[str], None] = print) -> None:
    """Everything a docker stack's ``pulumi up`` needs here: the engine, the provider, the built images."""
    say(f"==> engine: {engine()}")
    say(f"==> provider: {ensure_provider(workspace)}")
    took = build_images(load_stack(stack), say)
    if took:
        say("==> images built: " + ", ".join(f"{k} {v:.0f} s" for k, v in took.items()))
