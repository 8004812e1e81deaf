"""A stack's state directory moved whole to a new place (a release, or a ``state_dir`` setting, that keeps it
elsewhere): what the native stack's relocation before ``make up`` and the lab's ``LabState`` update both do.

Nothing is moved onto a directory that already holds data, and nothing is deleted but the emptied old place.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path


class StateMoveRefused(RuntimeError):
    """The data cannot move: the message says what holds the new place."""


def move_tree(old: Path, new: Path) -> None:
    """``old`` becomes ``new``: a rename on one filesystem, else a copy keeping owners and modes, then removal."""
    if new.exists():
        if any(new.iterdir()):
            raise StateMoveRefused(f"cannot move the stack's data from {old} to {new}: {new} already holds data "
                                   "(move or remove one of them by hand, or set the stack's state_dir to the old one)")
        new.rmdir()
    new.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(old, new)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:  # another filesystem; anything else is a real failure
            raise
    shutil.copytree(old, new, symlinks=True, copy_function=shutil.copy2)
    for source_root, dirs, files in os.walk(old):
        for name in (".", *dirs, *files):
            source = Path(source_root) / name
            info = source.lstat()
            os.lchown(new / source.relative_to(old), info.st_uid, info.st_gid)
    shutil.rmtree(old)
