"""The lab's built PostgreSQL image: Debian's ``postgresql-<major>``, the package the native artifact is."""

from __future__ import annotations

from pathlib import Path

from infra.artifacts.artifact import Artifact
from infra.artifacts.stack import StackArtifacts
from infra.services.built_image import BuiltImage, ImageContext, major


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    return ImageContext(args={"PG_MAJOR": major(artifact.version)})  # apt owns its files: the Dockerfile installs it


IMAGE = BuiltImage("postgres", "postgres", Path(__file__).with_name("lab"), context, package_major=True)
