"""The job's lineage: where its savepoints and retained checkpoints are, on the host."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def to_host(flink_path: str, host_paths: Mapping[str, str]) -> Path | None:
    """A path as Flink sees it (``file:///...``) on this host, through ``host_paths`` (Flink prefix -> host)."""
    path = flink_path.removeprefix("file://").removeprefix("file:")
    for remote, local in sorted(host_paths.items(), key=lambda item: -len(item[0])):
        remote_path = remote.removeprefix("file://").removeprefix("file:")
        if path == remote_path or path.startswith(remote_path.rstrip("/") + "/"):
            return Path(local) / path[len(remote_path):].lstrip("/")
    return None


def to_flink(host_path: Path, host_paths: Mapping[str, str]) -> str:
    """A host path back as Flink sees it (the inverse of ``to_host``)."""
    for remote, local in sorted(host_paths.items(), key=lambda item: -len(item[1])):
        if host_path == Path(local) or Path(local) in host_path.parents:
            rest = host_path.relative_to(local)
            base = remote.removeprefix("file://").removeprefix("file:").rstrip("/")
            return f"file://{base}/{rest}" if str(rest) != "." else f"file://{base}"
    return f"file://{host_path}"


def latest_state(checkpoint_dir: str, savepoint_dir: str, host_paths: Mapping[str, str]) -> str | None:
    """The newest savepoint or retained checkpoint of a lineage (as Flink sees it), or None.

    Checkpoints are ``<checkpoint_dir>/<job id>/chk-<n>/_metadata``, savepoints
    ``<savepoint_dir>/savepoint-*/_metadata``; the newest ``_metadata`` wins (an unfinished checkpoint
    has none).
    """
    found: list[Path] = []
    for flink_dir, pattern in ((checkpoint_dir, "*/chk-*/_metadata"), (savepoint_dir, "savepoint-*/_metadata")):
        local = to_host(flink_dir, host_paths)
        if local is not None and local.is_dir():
            found += [m for m in local.glob(pattern) if m.is_file()]
    if not found:
        return None
    newest = max(found, key=lambda m: m.stat().st_mtime)
    return to_flink(newest.parent, host_paths)
