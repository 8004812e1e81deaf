"""The lab's images built: each image's context staged from the artifact cache, the engine's classic builder,
and the build driver (the base check, the refusals, the operations image, every built image the engine lacks).

``lakehouse lab images build --stack lab`` and ``make up STACK=lab`` run it. Evaluating the program
never
builds: it only computes the tags (``lakehouse_platform.targets.lab_images.built_tags``) this driver builds under.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.paths import state_root
from lakehouse_platform.services import operations_support
from lakehouse_platform.services.built_image import ImageBuildError
from lakehouse_platform.targets.lab_images import Build, operations_args, plan, proxy_args, refusals

#: Lines of a failed build step's output the error carries.
BUILD_TAIL_LINES = 12


def _link(source: Path, target: Path) -> None:
    """A hard link of ``source`` (symlinks followed), else a copy: the context holds real files."""
    real = source.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(real, target)
    except OSError:
        shutil.copy2(real, target)


def stage(build: Build, into: Path) -> Path:
    """The build context of one image in ``into`` (replaced): Dockerfile, scripts, artifact files, texts."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    shutil.copy2(build.image.dockerfile, into / "Dockerfile")
    for script in build.image.scripts:
        shutil.copy2(script, into / script.name)
    for name, source in build.context.files.items():
        _link(source, into / name)
    for name, tree in build.context.trees.items():
        for path in _files_under(tree):
            _link(path, into / name / path.relative_to(tree))
    for name, text in build.context.texts.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_text(text)
    return into


def _files_under(tree: Path) -> Iterator[Path]:
    for root, _, names in os.walk(tree, followlinks=True):
        for name in names:
            yield Path(root) / name


def build_image(client: Any, path: Path, dockerfile: str, tag: str, args: Mapping[str, str],
                say: Callable[[str], None]) -> None:
    """One classic-builder build through the engine's API, its steps printed as they run."""
    stream = client.api.build(path=str(path), dockerfile=dockerfile, tag=tag, buildargs={**args, **proxy_args()},
                              rm=True, forcerm=True, decode=True)
    last: list[str] = []  # the failing step's own words (apt's "Version ... was not found"), for the error
    for chunk in stream:
        if "error" in chunk:
            said = "\n".join(f"    {line}" for line in last[-BUILD_TAIL_LINES:])
            raise ImageBuildError(f"building {tag} failed: {chunk['error'].strip()}"
                                  + (f"; its last output:\n{said}" if said else ""))
        for line in (chunk.get("stream") or "").splitlines():
            if line.startswith(("Step ", "Successfully")):
                say(f"  {tag}: {line}")
                last.clear()
            elif line.strip():
                last.append(line.strip())


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
    problems += refusals(spec, lambda name: present(client, name))
    if problems:
        raise ImageBuildError("\n".join(problems))


def build_all(spec: PlatformSpec, artifacts: StackArtifacts, client: Any, say: Callable[[str], None] = print,
              only: set[str] | None = None, operations: bool = True) -> dict[str, float]:
    """The operations image (unless not ``operations``: a stack's ``docker.Image`` builds it), then each built lab
    image whose tag the engine lacks (those in ``only``, when given); seconds per image built."""
    check(spec, client)
    took: dict[str, float] = {}
    if operations and (only is None or "operations" in only):
        tag = operations_support.OPERATIONS_IMAGE
        say(f"==> {tag}: building from the package ({operations_support.OPERATIONS_DOCKERFILE}; layers cached)")
        started = time.monotonic()
        build_image(client, operations_support.OPERATIONS_CONTEXT, operations_support.OPERATIONS_DOCKERFILE, tag,
                           operations_args(spec, artifacts), say)
        took["operations"] = time.monotonic() - started
    builds = plan(spec, artifacts)
    for key, build in builds.items():
        if only is not None and key not in only:
            continue
        if present(client, build.tag):
            say(f"==> {build.tag}: in the engine already")
            continue
        say(f"==> {build.tag}: staging the context from {build.artifact.path}")
        started = time.monotonic()
        context = stage(build, state_root() / "lab-images" / key)
        try:
            build_image(client, context, "Dockerfile", build.tag, build.args, say)
        finally:
            shutil.rmtree(context, ignore_errors=True)
        took[key] = time.monotonic() - started
        say(f"==> {build.tag}: built in {took[key]:.0f} s")
    return took
