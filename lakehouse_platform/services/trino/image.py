"""The lab's built Trino image: the trino-server tarball the native target unpacks, on the JDK it runs it with."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.services.built_image import BuiltImage, ImageBuildError, ImageContext
from lakehouse_platform.services.trino.config import JAVA


def context(artifact: Artifact, stack: StackArtifacts) -> ImageContext:
    jdk = stack.java.get(JAVA)
    if jdk is None:
        raise ImageBuildError(f"no JDK >= {JAVA} resolved for Trino's image (the native target's)")
    release = jdk / "release"
    return ImageContext(trees={"trino-server": artifact.path, "jdk": jdk},
                        digest_parts=(str(jdk), release.read_text() if release.is_file() else ""))


IMAGE = BuiltImage("trino", "trino", Path(__file__).with_name("lab"), context)
