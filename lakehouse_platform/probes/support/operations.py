"""The operating layers as the probes drive them: the operations CLI, the run record, the schedulers.

The probes run ``lakehouse`` exactly as an operator would (a subprocess, JSON on
stdout), with the stack outputs handed over as a file so each call does not have to ask Pulumi.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests

from lakehouse_platform.probes.support.stack import Stack

CLI_TIMEOUT_S = 900


@dataclass
class CliResult:
    """One run of the operations CLI."""

    argv: list[str]
    returncode: int
    output: Any
    stderr: str
    seconds: float

    def evidence(self) -> dict[str, Any]:
        return {"command": " ".join(self.argv[2:]), "exit": self.returncode, "stderr": self.stderr[-2000:],
                "output": self.output if isinstance(self.output, (dict, list)) else str(self.output)[-2000:]}


def outputs_file(stack: Stack) -> Path:
    """The stack outputs (secrets included) in a private temp file, for the CLI's ``--outputs``."""
    handle, name = tempfile.mkstemp(prefix="probe-outputs-", suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(stack.outputs, out)
    return Path(name)


def cli(stack: Stack, *args: str, with_stack: bool = False) -> CliResult:
    """``lakehouse <args> --outputs F [--stack S]``; ``with_stack`` when it must run Pulumi."""
    path = outputs_file(stack)
    argv = [sys.executable, "-m", "lakehouse_platform", *args, "--outputs", str(path)]
    if with_stack:
        argv += ["--stack", str(stack.name)]
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False)
    finally:
        path.unlink(missing_ok=True)
    seconds = time.perf_counter() - started
    try:
        output: Any = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        output = done.stdout
    return CliResult(argv, done.returncode, output, done.stderr, seconds)


def operations(stack: Stack) -> dict[str, Any]:
    return stack.outputs.get("operations") or {}


def service_url(stack: Stack, service: str, path: str) -> str | None:
    address = stack.endpoint(service, "http")
    return f"http://{address}{path}" if address else None


def scheduler_jobs(stack: Stack, service: str) -> dict[str, Any]:
    url = service_url(stack, service, "/jobs")
    if url is None:
        raise RuntimeError(f"{service} has no endpoint in the stack outputs")
    response = requests.get(url, timeout=10)
    response.raise_for_status()
    return {job["id"]: job for job in response.json()["jobs"]}


def runs(stack: Stack, job: str | None = None, target: str | None = None) -> list[Any]:
    """The run record of the stack, newest first."""
    from lakehouse_platform.runtime import runs as record

    db = operations(stack).get("runs_db")
    return record.recent(Path(db), job=job, target=target, limit=500) if db else []


def referenced_by_all_snapshots(table: Any) -> set[str]:
    """Every file any snapshot of the table references: metadata, manifest lists, manifests, data files."""
    paths = {table.metadata_location}
    for snapshot in table.metadata.snapshots:
        paths.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            paths.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                paths.add(entry.data_file.file_path)
    return paths


def missing_files(s3: Any, paths: set[str]) -> list[str]:
    """Which of the ``s3://`` paths do not exist (HEAD)."""
    from botocore.exceptions import ClientError

    gone = []
    for path in sorted(paths):
        parsed = urlparse(path)
        try:
            s3.head_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
        except ClientError:
            gone.append(path)
    return gone


def catalog_truth(catalog: Any) -> dict[str, dict[str, Any]]:
    """Every table of the catalog: row count, current snapshot id, every snapshot id, metadata location."""
    from lakehouse_platform.runtime.maintenance import catalog_tables

    truth: dict[str, dict[str, Any]] = {}
    for ident in catalog_tables(catalog):
        table = catalog.load_table(ident)
        snapshot = table.current_snapshot()
        truth[ident] = {"rows": int(table.scan().count()), "snapshot_id": snapshot.snapshot_id if snapshot else None,
                        "snapshots": sorted(s.snapshot_id for s in table.metadata.snapshots),
                        "metadata_location": table.metadata_location}
    return truth


def lose_catalog_database(stack: Stack) -> dict[str, Any]:
    """The incident: the catalog's database is gone. Stop the catalog, delete its database, start it again (empty).

    Through the target (``support.control``): natively by its pid record, then ``pulumi up``; in the lab ``docker
    stop``, the file deleted from the stack's bind-mounted state directory, ``docker start``.
    """
    from lakehouse_platform.probes.support.control import control

    ops = operations(stack)
    source = next(s for s in ops["backups"]["sqlite"] if s["name"] == ops["catalog"]["service"])
    database = Path(source["path"])
    ctl = control(stack, starts_again=True)
    started = time.perf_counter()
    stop_s = ctl.stop(source["name"])
    removed = [str(p) for p in (database, Path(f"{database}-journal"), Path(f"{database}-wal")) if p.exists()]
    for path in removed:
        Path(path).unlink()
    up_s = ctl.start(source["name"])
    stack.reload()
    return {"database": str(database), "removed": removed, "stop_s": round(stop_s, 2), "up_s": round(up_s, 1),
            "lost_at": time.time(), "seconds": round(time.perf_counter() - started, 1)}
