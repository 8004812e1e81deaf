"""The lab's built Flink image: the distribution and locked jars the native target runs, launched as natively."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageContext
from lakehouse_platform.services.flink.artifact import UTILS_JAR
from lakehouse_platform.services.flink.config import JOBMANAGER, LOG4J_CONSOLE


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    files = {f"lib/{p.name}": p for p in artifact.classpath}  # the distribution's lib/ and the locked jars
    files["bin/bash-java-utils.jar"] = artifact.path / UTILS_JAR
    classpath = "".join(f"/opt/flink/lib/{p.name}\n" for p in artifact.classpath)
    return ImageContext(files=files, texts={"classpath": classpath, "log4j-console.properties": LOG4J_CONSOLE})


IMAGE = BuiltImage("flink", JOBMANAGER, Path(__file__).with_name("lab"), context)
