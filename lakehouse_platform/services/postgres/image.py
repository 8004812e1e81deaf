"""The lab's built PostgreSQL image: Debian's ``postgresql-<major>``, the package the native artifact is."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageContext, major


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    """apt owns the server's files, so the Dockerfile installs the package, of exactly the version the host's artifact
    is (PG_VERSION, e.g. 15.18: what the tag says): never whatever point release the mirror has at build time. A
    mirror that no longer offers it fails the build, naming the version."""
    return ImageContext(args={"PG_MAJOR": major(artifact.version), "PG_VERSION": artifact.version})


IMAGE = BuiltImage("postgres", "postgres", Path(__file__).with_name("lab"), context)
