"""Where the project keeps things on the host: its root, stack state, the artifact cache, its tools."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = PROJECT_ROOT / ".tools"


#: The state root of a root user (services such as PostgreSQL run as their own system user and must reach it).
SYSTEM_STATE_ROOT = Path("/var/lib/lakehouse-platform")


def state_root() -> Path:
    """Where stacks keep their data on this host (native data dirs and logs, lab bind mounts): never in a checkout.

    ``$LAKEHOUSE_STATE_DIR`` if set; else ``/var/lib/lakehouse-platform`` for root (a service that runs as its
    own user, PostgreSQL, must traverse to its data: /root is closed); else
    ``${XDG_STATE_HOME:-~/.local/state}/lakehouse-platform``. A stack's directory is named after the stack
    (``stack_state_dir``), so a renamed, moved or second checkout deploying the same stack finds the same data,
    and running services never lose the ground under them when a checkout moves.
    """
    if os.environ.get("LAKEHOUSE_STATE_DIR"):
        return Path(os.environ["LAKEHOUSE_STATE_DIR"])
    if os.geteuid() == 0:
        return SYSTEM_STATE_ROOT
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "lakehouse-platform"


def stack_state_dir(stack: str, configured: str | None = None) -> Path:
    """A stack's state directory: its ``state_dir`` setting if it has one, else ``<state root>/<stack>``."""
    return Path(configured) if configured else state_root() / stack


def cache_base() -> Path:
    """``${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform}``: outside the repo, so a fresh clone finds it warm."""
    return Path(os.environ.get("LAKEHOUSE_CACHE") or Path.home() / ".cache" / "lakehouse-platform").expanduser()
