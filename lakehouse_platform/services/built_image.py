"""What a service's lab image is, when the lab builds it (``lab.images: built``) from the native target's artifact.

A service package that has one keeps it whole: ``lab/Dockerfile`` and the helper scripts it copies, beside an
``image`` module declaring a ``BuiltImage`` (the artifact it is built from, and what else its build context
holds). Its definition names the image (``OnDocker.image``), as do its jobs, which run their
service's image. ``lakehouse_platform.targets.lab_images`` plans their tags,
``lakehouse_platform.control.image_builds`` builds them; the
docker target runs the tags.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lakehouse_platform.artifacts.artifact import Artifact

if TYPE_CHECKING:
    from lakehouse_platform.artifacts.stack import StackArtifacts


class ImageBuildError(RuntimeError):
    """A lab image cannot be built or used; the message names the config key and what to do."""


@dataclass(frozen=True)
class ImageContext:
    """What one image's build context holds beyond its ``lab/`` directory: host files, generated files, arguments."""

    files: dict[str, Path] = field(default_factory=dict)  # context path -> host file (links followed)
    trees: dict[str, Path] = field(default_factory=dict)  # context dir -> host dir, whole
    texts: dict[str, str] = field(default_factory=dict)  # context path -> content
    args: dict[str, str] = field(default_factory=dict)  # build arguments (beyond BASE and CA_CERTIFICATES)
    digest_parts: tuple[str, ...] = ()  # what else the tag covers (a JDK's release file)


@dataclass(frozen=True)
class BuiltImage:
    """One service image of the lab: its ``lab/`` directory (Dockerfile and scripts), the artifact it is built from."""

    key: str  # the tag's name: lakehouse-lab/<key>
    artifact_of: str  # the service whose native artifact it is built from
    directory: Path  # the package's lab/ directory
    context: Callable[[Artifact, StackArtifacts], ImageContext] = lambda artifact, stack: ImageContext()

    @property
    def dockerfile(self) -> Path:
        return self.directory / "Dockerfile"

    def runs(self, artifact: Artifact) -> tuple[str, list[str]]:
        """What a container of this image runs: the artifact's version (an image built from a package installs that
        exact version, or its build fails), and why it is not the pin, where it is not."""
        return artifact.version, list(artifact.notes)

    @property
    def scripts(self) -> tuple[Path, ...]:
        """The helper scripts the Dockerfile copies: every other file of the directory."""
        return tuple(sorted(p for p in self.directory.iterdir() if p.is_file() and p.name != "Dockerfile"))


def major(version: str) -> str:
    return version.split(".", 1)[0]
