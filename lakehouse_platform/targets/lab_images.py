"""The lab's own images: each service's, built from the native target's verified artifacts, and the operations image.

With ``lab.images: built`` every lab service runs an image built here (its package's ``lab/Dockerfile``, on
``lab.base_image``) from the same artifacts the native target runs: no container registry is needed. The
build context of each is staged from the artifact cache into a directory of its own (hard links, or copies
across file systems; never the repository root), with the Dockerfile's helper scripts and the files the
renderers' configuration needs. Every image is tagged ``lakehouse-lab/<image>:<version>-<digest>``: the
version is what the artifact is (Trino 476, not the pin 483), the digest covers the Dockerfile, its scripts,
the artifact's recorded sha256 and the build arguments, so the program computes the same tag from the cache
without touching the engine (``built_tags``) and the build driver skips an image whose tag exists.

Polaris and Lakekeeper have no artifact: in built mode they run their upstream images, and only when those
are present in the engine already (``refusals``; checked by the build driver, never by evaluating the program).

This module plans (pure: what the program and the build driver agree on); ``lakehouse_platform.control.image_builds``
stages and builds, through the engine's own build API (the classic builder: what DOCKER_BUILDKIT=0 selects),
trusting the host's extra CA certificates and passing its proxy settings.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.services.built_image import BuiltImage, ImageBuildError, ImageContext, major

TAG_PREFIX = "lakehouse-lab"
#: The host's extra CA certificates, trusted by every build (apt, pip, the JREs through the system store).
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
#: Proxy settings passed through as build arguments (the engine does not bake them into the image).
PROXY_ARGS = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")


def images() -> dict[str, BuiltImage]:
    """image key -> the lab image, as the service packages declare them (``OnDocker.image``)."""
    from lakehouse_platform.services.registry import registry

    return {d.docker.image.key: d.docker.image for d in registry() if d.docker.image is not None}


def service_images() -> dict[str, str]:
    """service (or job) -> the key of the lab image it runs with ``lab.images: built``."""
    from lakehouse_platform.services.registry import registry

    return {d.name: d.docker.image.key for d in registry() if d.docker.image is not None}


def host_ca_certificates(directory: Path = HOST_CA_DIR) -> str:
    """The host's extra CA certificates (PEM, concatenated), for the CA_CERTIFICATES build argument."""
    if not directory.is_dir():
        return ""
    return "".join(p.read_text() for p in sorted(directory.glob("*.crt")))


def base_args(spec: PlatformSpec) -> dict[str, str]:
    """The build arguments every platform image takes: its base and the host's CA certificates."""
    return {"BASE": spec.lab.base_image, "CA_CERTIFICATES": host_ca_certificates()}


def proxy_args() -> dict[str, str]:
    """The host's proxy settings, as build arguments (never part of a tag: they do not change the image)."""
    return {name: os.environ[name] for name in PROXY_ARGS if os.environ.get(name)}


def operations_args(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, str]:
    """Build arguments of the operations image: its base, the CA, and the lab server's PostgreSQL major."""
    from lakehouse_platform.services.capabilities import DATABASE
    from lakehouse_platform.services.registry import registry

    database = registry().provider(spec, DATABASE) or registry().providers(DATABASE)[0]
    if spec.lab_built and database in artifacts.services:
        pg_major = major(artifacts.services[database].version)  # what the built server runs (Debian's)
    else:
        pg_major = major(spec.services[database].version)
    return {**base_args(spec), "PG_MAJOR": pg_major}


@dataclass(frozen=True)
class Build:
    """One image to build: its tag, Dockerfile, staged context and arguments."""

    image: BuiltImage
    tag: str
    artifact: Artifact
    context: ImageContext
    args: dict[str, str]


def plan(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, Build]:
    """image key -> its build, for every lab image an enabled service of the stack runs (built mode only)."""
    if not spec.lab_built:
        return {}
    by_service, by_key = service_images(), images()
    wanted = {by_service[name] for name in spec.enabled_services() if name in by_service}
    base = base_args(spec)  # the host's CA certificates, read once
    builds: dict[str, Build] = {}
    for key in sorted(wanted):
        image = by_key[key]
        artifact = artifacts.services.get(image.artifact_of)
        if artifact is None:
            raise ImageBuildError(f"services.{image.artifact_of}: no artifact resolved for the lab's {key} image "
                                f"(lab.images: built builds it from the native artifact); run `make artifacts "
                                f"STACK=<stack>`")
        context = image.context(artifact, artifacts)
        args = {**base, **context.args}
        builds[key] = Build(image, tag_of(image, artifact, context, args), artifact, context, args)
    return builds


def service_builds(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, Build]:
    """service -> the build of the image it runs (empty unless ``lab.images: built``)."""
    builds = plan(spec, artifacts)
    if not builds:
        return {}
    by_service = service_images()
    return {name: builds[by_service[name]] for name in spec.enabled_services() if name in by_service}


def built_tags(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, str]:
    """service -> the tag of the built image it runs (empty unless ``lab.images: built``)."""
    return {name: build.tag for name, build in service_builds(spec, artifacts).items()}


def tag_of(image: BuiltImage, artifact: Artifact, context: ImageContext, args: Mapping[str, str]) -> str:
    """``lakehouse-lab/<image>:<artifact version>-<digest>``: the digest covers everything the image is made of."""
    digest = hashlib.sha256()
    for source in (image.dockerfile.read_bytes(), *(script.read_bytes() for script in image.scripts)):
        digest.update(hashlib.sha256(source).digest())
    digest.update(f"{artifact.name}\0{artifact.version}\0{artifact.sha256}\0".encode())
    for name, text in sorted(context.texts.items()):
        digest.update(f"{name}\0{hashlib.sha256(text.encode()).hexdigest()}\0".encode())
    for name, value in sorted(args.items()):
        digest.update(f"{name}\0{hashlib.sha256(value.encode()).hexdigest()}\0".encode())
    for part in context.digest_parts:
        digest.update(part.encode() + b"\0")
    version = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in artifact.version)
    return f"{TAG_PREFIX}/{image.key}:{version}-{digest.hexdigest()[:12]}"


def refusals(spec: PlatformSpec, present: Callable[[str], bool]) -> list[str]:
    """In built mode, every enabled service with no artifact whose upstream image the engine lacks, with why."""
    from lakehouse_platform.services.registry import registry

    if not spec.lab_built:
        return []
    problems = []
    for name, service in spec.enabled_services().items():
        definition = registry()[name]
        if definition.docker.image is not None or definition.docker.container is None:
            continue
        if _operations_service(spec, name):
            continue
        why = definition.why_not_on(Target.NATIVE) or "it has no native artifact"
        if definition.job_of is not None:
            owner = registry()[definition.job_of]
            why = owner.why_not_on(Target.NATIVE) or why
        if not present(service.image):
            key = definition.job_of or name
            problems.append(f"services.{key}.enabled: lab.images: built builds no image for {name} ({why}) and its "
                            f"upstream image {service.image} is not in the engine; disable services.{key}, or load "
                            "the image first (docker load)")
    return list(dict.fromkeys(problems))


def _operations_service(spec: PlatformSpec, name: str) -> bool:
    """Whether a service runs the operations image (built from the repository, in every mode)."""
    from lakehouse_platform.services import operations_support

    return spec.services[name].image == operations_support.OPERATIONS_IMAGE
