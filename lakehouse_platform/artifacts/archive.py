"""Unpacking a downloaded archive into the cache, atomically, keeping only what a service runs."""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path


def unpack_tarball(tarball: Path, home: Path, top: str, prune: Callable[[Path], None] | None = None) -> Path:
    """Unpack ``tarball`` (whose single top directory is ``top``) to ``home``; ``prune`` trims it first.

    Everything is unpacked, then pruned: archives may store shared files as hard links to the first
    copy, which may be one that is pruned. ``home`` appears only once complete.
    """
    staging = home.with_name(home.name + ".unpacking")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(tarball, "r|gz") as archive:
        archive.extractall(staging, filter="data")
    unpacked = staging / top
    if prune is not None:
        prune(unpacked)
    os.replace(unpacked, home)
    staging.rmdir()
    return home
