"""The job's lineage: where its savepoints and retained checkpoints are, on the host."""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from pathlib import Path

from lakehouse_platform.services.flink.job.inputs import JobInputs

#: Beside a lineage's savepoints: the job graph version (``state_version``) whose state the lineage holds. The
#: program reads it before a deployment (``lakehouse_platform.services.flink.steps.in_place``) to refuse a graph that
# cannot
#: restore that state.
GRAPH_MARKER = "job-graph.json"


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


def make_state_dir(local: Path, owner: str | None) -> None:
    """Make a directory of the job's state, each directory made handed to ``owner`` ("uid:gid", the user Flink runs
    as): the deploying host (root) makes the lineage's savepoint directory, and Flink must create its savepoints in
    it. A host that may not hand it over (not root) opens it to every user instead, so Flink can still write."""
    made = [d for d in (local, *local.parents) if not d.exists()]
    local.mkdir(parents=True, exist_ok=True)
    if owner is None:
        return
    uid, gid = (int(part) for part in owner.split(":"))
    for directory in [local, *made]:
        if (directory.stat().st_uid, directory.stat().st_gid) == (uid, gid):
            continue
        try:
            os.chown(directory, uid, gid)
        except PermissionError:
            directory.chmod(0o777)


def record_graph(spec: JobInputs) -> None:
    """Write the lineage's ``GRAPH_MARKER``: the graph version whose state it now holds (what a refusal reads)."""
    local = to_host(spec.savepoint_dir, spec.host_paths)
    if local is None:
        return  # a savepoint directory this host cannot see (aws): nothing to read it from either
    make_state_dir(local, spec.state_owner)
    marker = {"state_version": spec.state_version, "job_name": spec.job_name, "jar_digest": spec.jar_digest,
              "recorded_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
    (local / GRAPH_MARKER).write_text(json.dumps(marker) + "\n")


def recorded_graph(savepoint_dir: Path) -> int | None:
    """The graph version a lineage's state belongs to: its marker, else 1 (jobs before markers) when the lineage
    holds any state, else None (nothing to restore)."""
    try:
        return int(json.loads((savepoint_dir / GRAPH_MARKER).read_text())["state_version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    has_state = any(savepoint_dir.glob("savepoint-*/_metadata")) or any(
        savepoint_dir.parent.parent.glob(f"checkpoints/{savepoint_dir.name}/*/chk-*/_metadata"))
    return 1 if has_state else None
