"""The lab's built REST fixture image: the fixture jar with the loopback launcher, and PostgreSQL's driver."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageBuildError, ImageContext
from lakehouse_platform.services.rest_fixture.container import BUILT_IMAGE_DRIVER, IMAGE_JAR


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    driver = next((p for p in artifact.classpath if p.name.startswith("postgresql-")), None)
    if driver is None:
        raise ImageBuildError(f"the rest-fixture artifact ({artifact.path}) has no PostgreSQL driver on its classpath")
    return ImageContext(files={IMAGE_JAR: artifact.path, BUILT_IMAGE_DRIVER: driver})


IMAGE = BuiltImage("rest-fixture", "rest-fixture", Path(__file__).with_name("lab"), context)
