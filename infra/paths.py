"""Where the project keeps things on the host: its root, stack state, the artifact cache, its tools."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = PROJECT_ROOT / ".tools"


def state_root() -> Path:
    """Where stacks keep local state (native data dirs and logs, lab bind mounts).

    ``$LAKEHOUSE_STATE_DIR`` if set, else ``<project>/.state``, unless some parent of the
    project is closed to other users (a checkout under /root): natively PostgreSQL runs as its own
    system user and must reach its data directory, so the state then lives under /var/tmp.
    """
    if os.environ.get("LAKEHOUSE_STATE_DIR"):
        return Path(os.environ["LAKEHOUSE_STATE_DIR"])
    if all(os.stat(p).st_mode & 0o001 for p in (PROJECT_ROOT, *PROJECT_ROOT.parents)):
        return PROJECT_ROOT / ".state"
    return Path("/var/tmp/lakehouse-platform") / hashlib.sha256(str(PROJECT_ROOT).encode()).hexdigest()[:12]


def cache_base() -> Path:
    """``${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform}``: outside the repo, so a fresh clone finds it warm."""
    return Path(os.environ.get("LAKEHOUSE_CACHE") or Path.home() / ".cache" / "lakehouse-platform").expanduser()
