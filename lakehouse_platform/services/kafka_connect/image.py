"""The lab's built Kafka Connect image: the worker and both plugin directories the native target runs."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageContext
from lakehouse_platform.services.kafka_connect.config import CONNECT, LOG4J2


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    root = artifact.path
    return ImageContext(trees={"libs": root / "libs", "plugins": root / "plugins"}, texts={"log4j2.properties": LOG4J2})


IMAGE = BuiltImage("kafka-connect", CONNECT, Path(__file__).with_name("lab"), context)
