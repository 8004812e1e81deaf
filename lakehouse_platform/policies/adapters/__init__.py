"""Per-provider readers: what a docker container, an ECS task definition or a native LocalService
holds, in one shape (``EnvEntry``, ``ConfigFile``, image references) the rules read alike."""

from __future__ import annotations

from dataclasses import dataclass

from lakehouse_platform.policies.adapters import aws, docker, native
from lakehouse_platform.policies.adapters.common import ConfigFile, EnvEntry
from lakehouse_platform.policies.resources import (
    DOCKER_CONTAINER,
    DOCKER_REMOTE_IMAGE,
    ECS_TASK_DEFINITION,
    Resource,
    is_dynamic,
)
from lakehouse_platform.policies.wire import is_unknown, reveal

__all__ = ["ConfigFile", "EnvEntry", "ImageRef", "aws", "config_files", "docker", "env_entries", "image_refs",
           "native", "parse_image"]


def env_entries(resource: Resource) -> list[EnvEntry]:
    """The environment of a docker container or native service, with each entry's secrecy."""
    if resource.type == DOCKER_CONTAINER:
        return docker.env_entries(resource)
    if is_dynamic(resource.type):
        return native.env_entries(resource)
    return []


def config_files(resource: Resource) -> list[ConfigFile]:
    """Files a docker container gets uploaded, an ECS task writes, or a native service gets written."""
    if resource.type == DOCKER_CONTAINER:
        return docker.config_files(resource)
    if resource.type == ECS_TASK_DEFINITION:
        return aws.config_files(resource)
    if is_dynamic(resource.type):
        return native.config_files(resource)
    return []


@dataclass(frozen=True)
class ImageRef:
    ref: str
    tag: str | None
    digest: str | None


def parse_image(ref: str) -> ImageRef:
    name, _, digest = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else None
    return ImageRef(ref, tag or None, digest or None)


def image_refs(resource: Resource) -> list[str]:
    """Image references a resource pulls (image ids such as sha256:... are not references)."""
    refs: list[object] = []
    if resource.type == DOCKER_REMOTE_IMAGE:
        refs.append(reveal(resource.props.get("name")))
    elif resource.type == DOCKER_CONTAINER:
        refs.append(reveal(resource.props.get("image")))
    elif resource.type == ECS_TASK_DEFINITION:
        refs.extend(reveal(c.get("image")) for c in aws.container_definitions(resource) or [])
    return [r for r in refs if isinstance(r, str) and r and not is_unknown(r) and not r.startswith("sha256:")]
