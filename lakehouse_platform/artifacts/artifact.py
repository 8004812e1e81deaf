"""What an artifact is: one thing the native target runs (or the lab mounts), as found in the verified cache."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class ArtifactError(RuntimeError):
    """An artifact could not be obtained or failed verification; the message says what to do."""


class ArtifactMissing(ArtifactError):
    """An artifact the program needs is not in the verified cache (the program never fetches)."""


@dataclass(frozen=True)
class Artifact:
    """One thing the native target runs, as found in the cache.

    ``path`` is the one path a launcher needs (a binary, a home directory, a bin directory or a jar);
    ``classpath``/``main_class`` are set for JVM programs started with ``java -cp``.
    """

    name: str
    requested: str
    version: str
    path: Path
    size_bytes: int
    sha256: str
    classpath: tuple[Path, ...] = ()
    main_class: str | None = None
    notes: tuple[str, ...] = ()
