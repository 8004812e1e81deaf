"""What an artifact is, and how a service's definition says where its artifact comes from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infra.services.base import ServiceContext


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


@dataclass(frozen=True)
class ArtifactRecipe:
    """How the native target obtains what a service runs.

    ``key`` names the cache entry from the service's pins (so the program and ``make artifacts``
    agree on what a pin means); ``fetch`` obtains it into the cache (downloads, builds, apt) and
    records it under that key. The program only ever looks the key up.
    """

    key: Callable[[ServiceContext], str]
    fetch: Callable[[ServiceContext], Artifact]
    source: str  # where it comes from, for the fetch table and the README
    #: Whether the stack needs it at all (None: whenever the service runs), e.g. a driver for one backend only.
    needed: Callable[[ServiceContext], bool] | None = None
