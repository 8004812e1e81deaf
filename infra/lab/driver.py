"""The build driver: the base check, the refusals, the operations image and every built lab image (cached).

``python -m infra.lab images build --stack lab``. Evaluating the program never builds: it only computes the
tags (``images.built_tags``) this driver builds under.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from infra.artifacts.stack import StackArtifacts
from infra.lab import images
from infra.paths import PROJECT_ROOT, state_root
from infra.services import operations_support
from infra.spec import PlatformSpec


def present(client: Any, name: str) -> bool:
    """Whether the engine has an image under ``name``."""
    import importlib

    errors = importlib.import_module("docker.errors")
    try:
        client.images.get(name)
    except errors.ImageNotFound:
        return False
    return True


def check(spec: PlatformSpec, client: Any) -> None:
    """The base image is in the engine, and every service without an artifact has its upstream image there."""
    problems = []
    if not present(client, spec.lab.base_image):
        problems.append(f"lab.base_image: {spec.lab.base_image} is not in the engine; pull it, or make it from "
                        "Debian's mirror with `make lab-base` (no registry needed)")
    problems += images.refusals(spec, lambda name: present(client, name))
    if problems:
        raise images.ImageBuildError("\n".join(problems))


def build_all(spec: PlatformSpec, artifacts: StackArtifacts, client: Any, say: Callable[[str], None] = print,
              only: set[str] | None = None) -> dict[str, float]:
    """The operations image, then each built lab image whose tag the engine lacks; seconds per image built."""
    check(spec, client)
    took: dict[str, float] = {}
    if only is None or "operations" in only:
        tag = operations_support.OPERATIONS_IMAGE
        say(f"==> {tag}: building from the repository ({operations_support.OPERATIONS_DOCKERFILE}; layers cached)")
        started = time.monotonic()
        images.build_image(client, PROJECT_ROOT, operations_support.OPERATIONS_DOCKERFILE, tag,
                           images.operations_args(spec, artifacts), say)
        took["operations"] = time.monotonic() - started
    builds = images.plan(spec, artifacts)
    for key, build in builds.items():
        if only is not None and key not in only:
            continue
        if present(client, build.tag):
            say(f"==> {build.tag}: in the engine already")
            continue
        say(f"==> {build.tag}: staging the context from {build.artifact.path}")
        started = time.monotonic()
        context = images.stage(build, state_root() / "lab-images" / key)
        try:
            images.build_image(client, context, "Dockerfile", build.tag, build.args, say)
        finally:
            import shutil

            shutil.rmtree(context, ignore_errors=True)
        took[key] = time.monotonic() - started
        say(f"==> {build.tag}: built in {took[key]:.0f} s")
    return took
