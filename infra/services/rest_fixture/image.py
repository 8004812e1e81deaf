"""The lab's built REST fixture image: the fixture jar with the loopback launcher, and PostgreSQL's driver."""

from __future__ import annotations

from pathlib import Path

from infra.artifacts.artifact import Artifact
from infra.artifacts.stack import StackArtifacts
from infra.services.built_image import BuiltImage, ImageBuildError, ImageContext


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    driver = next((p for p in artifact.classpath if p.name.startswith("postgresql-")), None)
    if driver is None:
        raise ImageBuildError(f"the rest-fixture artifact ({artifact.path}) has no PostgreSQL driver on its classpath")
    return ImageContext(files={"iceberg-rest-adapter.jar": artifact.path, "postgresql.jar": driver})


IMAGE = BuiltImage("rest-fixture", "rest-fixture", Path(__file__).with_name("lab"), context)
