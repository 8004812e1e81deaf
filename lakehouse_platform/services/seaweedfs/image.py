"""The lab's built SeaweedFS image: the ``weed`` binary the native target builds."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageContext


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    return ImageContext(files={"weed": artifact.path})


IMAGE = BuiltImage("seaweedfs", "seaweedfs", Path(__file__).with_name("lab"), context)
