"""A native stack's data moved to where this release keeps it, before ``pulumi up`` (``make up``).

Releases before 0.4.0 kept a native stack's data and logs inside the checkout (``<checkout>/.state/<stack>``,
or under /var/tmp by a hash of the checkout's path); this one keeps them under the state root, named after
the stack (``lakehouse_platform.paths.state_root``), and a stack's ``state_dir`` setting may move them anywhere. When
the
deployed stack (its ``native.state_dir`` output) lives somewhere else than the program will put it, the whole
directory moves, in order: every service stopped by its recorded pid (dependents first), the directory
renamed (copied with owners and modes kept, then removed, across filesystems), then ``pulumi up`` starts each
service in the new place with all its data. Nothing is moved onto a directory that already holds data.

A bare ``pulumi up`` does not move anything: it stops at the program's port check (the old processes still
hold their ports), or, with the old processes gone, starts the services afresh in the new place and leaves the
old data where it was (nothing is ever deleted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lakehouse_platform.config import ConfigError, load_stack
from lakehouse_platform.model import Target
from lakehouse_platform.paths import stack_state_dir
from lakehouse_platform.targets.state_move import StateMoveRefused, move_tree

#: The data cannot move (the message says what holds the new place); the lab's ``LabState`` refuses the same way.
RelocationRefused = StateMoveRefused


def pending(stack: str, deployed: Mapping[str, Any]) -> tuple[Path, Path] | None:
    """(old, new) when the deployed native stack's data lives elsewhere than the program will put it."""
    old_text = (deployed.get("native") or {}).get("state_dir")
    if not old_text:
        return None
    try:
        spec = load_stack(stack)
    except ConfigError:
        return None  # the program says what is wrong with the stack's config
    if spec.target is not Target.NATIVE:
        return None
    old, new = Path(old_text), stack_state_dir(stack, spec.state_dir)
    if old == new or not old.is_dir():
        return None
    return old, new


def relocate(stack: str, deployed: Mapping[str, Any], say: Callable[[str], None] = print) -> Path | None:
    """Move the deployed stack's data to where the program puts it (see the module docstring); the new place."""
    found = pending(stack, deployed)
    if found is None:
        return None
    old, new = found
    if new.exists() and any(new.iterdir()):
        raise RelocationRefused(f"the stack's data is at {old} and the program puts it at {new}, which already "
                                "holds data: move or remove one of them by hand, or set the stack's state_dir")
    from lakehouse_platform.control import services

    control = services.for_outputs(deployed, stack)
    for name in reversed(list(control.services())):  # dependents first
        control.stop(name)
    say(f"==> moving stack {stack}'s data from {old} to {new} (services stopped; pulumi up starts them there)")
    move_tree(old, new)
    return new
