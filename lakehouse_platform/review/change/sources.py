"""Reading the two sides of a change: a stack file on disk, or a revision of one in git (``main:Pulumi.cloud.yaml``)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakehouse_platform.config import CONFIG_KEY, ConfigError, load_platform, parse_stack_config
from lakehouse_platform.model import PlatformSpec

_STACK_FILE = re.compile(r"^Pulumi\.(?P<stack>[^/]+)\.yaml$")


class SourceError(Exception):
    """A side of the change that cannot be read (no such file, an unknown revision)."""


@dataclass(frozen=True)
class StackSource:
    """One side of a change: where it was read from, its stack's name, and its config (None: no such stack file at
    that revision, i.e. the change creates the stack)."""

    label: str
    stack: str
    config: dict[str, Any] | None

    def spec(self) -> PlatformSpec | None:
        """The side's validated platform (ConfigError names the bad keys), or None for a stack that did not exist."""
        if self.config is None:
            return None
        return load_platform(self.config.get(CONFIG_KEY), source=self.label)


def stack_name(path: str) -> str:
    """``Pulumi.cloud.yaml`` -> ``cloud`` (any other file: its name without the extension)."""
    name = Path(path).name
    match = _STACK_FILE.match(name)
    return match.group("stack") if match else Path(name).stem


def read_source(ref: str, root: Path) -> StackSource:
    """A stack file (a path, relative to ``root`` or absolute) or ``REV:PATH`` read from git in ``root``, the PATH
    relative to ``root`` (the project: a team's may be a directory of its repository)."""
    path = Path(ref) if Path(ref).is_absolute() else root / ref
    if path.is_file():
        return StackSource(ref, stack_name(ref), parse_stack_config(path.read_bytes(), ref))
    rev, sep, inside = ref.partition(":")
    if not sep or not rev or not inside:
        raise SourceError(f"{ref}: no such file; give a stack file or REV:PATH (e.g. main:Pulumi.cloud.yaml)")
    if subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=root,
                      capture_output=True, check=False).returncode != 0:
        raise SourceError(f"{ref}: {rev!r} is not a revision of the repository at {root}")
    relative = inside if inside.startswith(("/", "./", "../")) else f"./{inside}"
    shown = subprocess.run(["git", "show", f"{rev}:{relative}"], cwd=root, capture_output=True, check=False)
    if shown.returncode != 0:
        message = shown.stderr.decode(errors="replace").strip()
        if "does not exist" in message or "exists on disk, but not in" in message:
            return StackSource(ref, stack_name(inside), None)  # the change adds this stack file
        raise SourceError(f"{ref}: git show failed: {message}")
    return StackSource(ref, stack_name(inside), parse_stack_config(shown.stdout, ref))


__all__ = ["ConfigError", "SourceError", "StackSource", "read_source", "stack_name"]
