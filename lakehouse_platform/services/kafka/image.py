"""The lab's built Kafka image: the locked runtime classpath the native target runs."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageContext
from lakehouse_platform.services.kafka.config import KAFKA, LOG4J2


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    return ImageContext(trees={"libs": artifact.path}, texts={"log4j2.properties": LOG4J2})


IMAGE = BuiltImage("kafka", KAFKA, Path(__file__).with_name("lab"), context)
