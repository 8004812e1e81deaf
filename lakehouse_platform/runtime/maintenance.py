"""Maintenance that runs: the spec's four actions on a table, through the stack's SQL engine, recorded.

``run_action`` runs one action on one table under the table's lock (``locks``), and records the run (``runs``:
start, end, table, result, files and snapshots removed). The engine is whichever service provides ``SQL_ENGINE``:
maintenance asks its runtime code (``EngineAccess.runtime``, e.g. ``lakehouse_platform.services.trino.runtime``) for
each action's statement and for an executor (``EngineRuntime``), never an engine by name. An engine's procedures may
return nothing, so what a run did is measured around it, in ways that stay exact while other writers commit:

* ``snapshots_removed``: snapshot ids present before and gone after (from the table metadata);
* ``files_removed``: objects under the table's location present before and gone after (an S3
  listing: the files the run really deleted from storage, whoever referenced them);
* the summary of the run's own ``replace`` commits (rewritten/added data files, bytes).

Thresholds. **Expiry** follows each table's retention (``OperationsConfig.retention_of``: the spec's
``tables.*.retention``, the streams' tables', ``table_defaults.retention``): it keeps the newest ``keep_last``
snapshots and none older than ``max_age_s``, so its threshold is the younger of the two, read from the table's
snapshots just before the run (``expiry_threshold_s``). Expiry deletes only files no kept snapshot references, so a
writer's uncommitted files are never among them. **Orphan removal** keeps its safety margin, the job's
``older_than_days`` (at least one day, default 7): an unreferenced file younger than that may belong to a commit
still being made. With the maintenance clock sped up (``speedup``, benchmarks and drills) every age is that many
times shorter. A threshold of the operator's own is an explicit ``--older-than`` (drills, probes). How an engine
holds a threshold below its own minimum is its runtime code's (Trino: a session property per query).
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from lakehouse_platform.runtime import runs
from lakehouse_platform.runtime.config import (
    DEFAULT_MARGIN_DAYS,
    Credentials,
    EngineAccess,
    MaintenanceJobConfig,
    OperationsConfig,
    RetentionConfig,
    load_catalog,
    s3_client,
)
from lakehouse_platform.runtime.locks import table_lock

ACTIONS = ("expire_snapshots", "rewrite_data_files", "rewrite_manifests", "remove_orphan_files")

DAY_S = 86400
REMOVED_SAMPLE = 50
#: Actions with nothing to do on a table never written (and whose engine procedure may fail on one).
NEEDS_A_SNAPSHOT = ("rewrite_manifests",)
#: Added to a count-bound threshold: the engine measures it from its query's start, a moment after the snapshots
#: were read, and a snapshot that became older than the threshold meanwhile would go below keep_last.
THRESHOLD_SLACK_S = 5


class MaintenanceError(RuntimeError):
    """A maintenance run failed; the run record holds the same message."""


def parse_duration(text: str) -> float:
    """``30s``, ``10m``, ``2h``, ``7d`` -> seconds (the ``--older-than`` form)."""
    text = text.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": DAY_S}
    if len(text) < 2 or text[-1] not in units or not text[:-1].replace(".", "", 1).isdigit():
        raise ValueError(f"{text!r} is not a duration: a number and one of s, m, h, d (e.g. 30s, 7d)")
    return float(text[:-1]) * units[text[-1]]


def expiry_threshold_s(retention: RetentionConfig, snapshot_times_ms: Iterable[int], now_s: float) -> float:
    """Expiry's threshold for a table now: snapshots older than it go. The younger of its maximum age and the
    age of its ``keep_last``-th newest snapshot (plus ``THRESHOLD_SLACK_S``), so neither bound is passed."""
    newest_first = sorted(snapshot_times_ms, reverse=True)
    threshold = retention.max_age_s
    if len(newest_first) > retention.keep_last:
        last_kept_s = newest_first[retention.keep_last - 1] / 1000
        threshold = min(threshold, math.ceil(now_s - last_kept_s) + THRESHOLD_SLACK_S)
    return max(float(threshold), 1.0)


Executor = Callable[[str, dict[str, str]], None]


class EngineRuntime(Protocol):
    """What the SQL engine's runtime module offers maintenance (the ``SQL_ENGINE`` capability's runtime contract)."""

    def statement(self, action: str, catalog: str, identifier: str,
                  threshold_s: float | None) -> tuple[str, dict[str, str]]:
        """The statement of ``action`` on a table (``catalog``-qualified), and the session properties it runs with."""

    def executor(self, access: EngineAccess, creds: Credentials) -> Executor:
        """Runs one statement with its session properties, as the maintenance identity."""


def engine_runtime(config: OperationsConfig) -> tuple[EngineAccess, EngineRuntime]:
    """The stack's SQL engine and its runtime code (a module of the engine's package, loaded by name)."""
    if config.engine is None:
        raise MaintenanceError("this stack runs no SQL engine: maintenance runs through the SQL_ENGINE provider's "
                               "Iceberg procedures")
    return config.engine, cast(EngineRuntime, importlib.import_module(config.engine.runtime))


@dataclass
class TableState:
    """What a run is measured against: the table's snapshots and the objects under its location."""

    snapshots: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> {timestamp_ms, operation, summary}
    objects: set[str] = field(default_factory=set)
    current: dict[str, str] = field(default_factory=dict)  # the current snapshot's summary
    location: str = ""


def list_objects(s3: Any, location: str) -> set[str]:
    """Every key under a table's location (``s3://bucket/prefix``; a ``file://`` one, a local warehouse, walked)."""
    if location.startswith("file://"):
        root = Path(location.removeprefix("file://"))
        return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    prefix = prefix.rstrip("/") + "/"
    keys: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.update(item["Key"] for item in page.get("Contents", []))
    return keys


def observe(catalog: Any, s3: Any, identifier: str) -> TableState:
    """The table as the catalog and the store see it now."""
    table = catalog.load_table(identifier)
    snapshots = {
        s.snapshot_id: {"timestamp_ms": s.timestamp_ms,
                        "operation": s.summary.operation.value if s.summary else "",
                        "summary": dict(s.summary.additional_properties) if s.summary else {}}
        for s in table.metadata.snapshots
    }
    current = table.current_snapshot()
    return TableState(snapshots=snapshots, objects=list_objects(s3, table.location()) if s3 is not None else set(),
                      current=dict(current.summary.additional_properties) if current and current.summary else {},
                      location=table.location())


def _changes(before: TableState, after: TableState) -> dict[str, Any]:
    gone_snapshots = sorted(set(before.snapshots) - set(after.snapshots))
    gone_objects = sorted(before.objects - after.objects)
    keep = ("added-data-files", "deleted-data-files", "removed-delete-files", "added-delete-files",
            "added-files-size", "removed-files-size", "added-records", "deleted-records")
    own = [{"snapshot_id": sid, **{k: v for k, v in after.snapshots[sid]["summary"].items() if k in keep}}
           for sid in sorted(set(after.snapshots) - set(before.snapshots))
           if after.snapshots[sid]["operation"] == "replace"]
    return {
        "snapshots_removed": len(gone_snapshots),
        "files_removed": len(gone_objects),
        "snapshots_before": len(before.snapshots), "snapshots_after": len(after.snapshots),
        "objects_before": len(before.objects), "objects_after": len(after.objects),
        "data_files_before": before.current.get("total-data-files"),
        "data_files_after": after.current.get("total-data-files"),
        "delete_files_before": before.current.get("total-delete-files"),
        "delete_files_after": after.current.get("total-delete-files"),
        "replace_commits": own,
        "removed_snapshot_ids": gone_snapshots[:REMOVED_SAMPLE],
        "removed_files_sample": gone_objects[:REMOVED_SAMPLE],
    }


def run_action(config: OperationsConfig, creds: Credentials, action: str, identifier: str, *,
               older_than_s: float | None = None, trigger: str = "schedule", catalog: Any = None,
               s3: Any = None, execute: Executor | None = None,
               waiting: Callable[[str], None] | None = None) -> runs.Run:
    """Run one maintenance action on one table, under its lock; the finished run record (ok or failed).

    ``older_than_s`` is the threshold of expire/orphan removal (default: expiry the table's retention
    (``expiry_threshold_s``), orphan removal its job's margin, else 7 days; both divided by the clock's
    speedup). ``catalog``, ``s3`` and ``execute`` default to the stack's own clients.
    """
    if action not in ACTIONS:
        raise MaintenanceError(f"unknown maintenance action {action!r}; known: {', '.join(ACTIONS)}")
    job = config.job(action)
    if action == "remove_orphan_files" and older_than_s is None:
        older_than_s = float((job.margin_days if job else DEFAULT_MARGIN_DAYS) * DAY_S) / config.speedup
    retention = config.retention_of(identifier) if action == "expire_snapshots" and older_than_s is None else None
    if action == "expire_snapshots" and older_than_s is None and retention is None:
        older_than_s = float(DEFAULT_MARGIN_DAYS * DAY_S)  # a config rendered before retention existed
    access, engine_code = engine_runtime(config)
    db = Path(config.runs_db)
    with table_lock(config.locks_dir, identifier, waiting=waiting) as waited:
        engine = access.engine or "none"
        run = runs.start(db, runs.Run(job=action, target=identifier, trigger=trigger, engine=engine))
        started = time.monotonic()
        detail: dict[str, Any] = {"lock_wait_s": round(waited, 3)}
        try:
            catalog = catalog if catalog is not None else load_catalog(config, creds)
            s3 = s3 if s3 is not None else s3_client(config, creds)
            before = observe(catalog, s3, identifier)
            if retention is not None:
                older_than_s = expiry_threshold_s(
                    retention, [s["timestamp_ms"] for s in before.snapshots.values()], time.time())
                detail["retention"] = {"keep_last": retention.keep_last, "max_age_s": retention.max_age_s}
            sql, session = engine_code.statement(action, access.catalog, identifier, older_than_s)
            detail.update(statement=sql, session=session)
            if older_than_s is not None:
                detail["older_than_s"] = older_than_s
            if action in NEEDS_A_SNAPSHOT and not before.snapshots:
                # Trino's optimize_manifests fails on a table never written ("snapshot is null"): nothing to do.
                return runs.finish(db, run, "ok", **detail, **_changes(before, before), nothing_to_do=True,
                                   reason="the table has no snapshot yet",
                                   seconds=round(time.monotonic() - started, 3))
            (execute or engine_code.executor(access, creds))(sql, session)
            after = observe(catalog, s3, identifier)
        except Exception as exc:  # noqa: BLE001 - recorded as a failed run, then raised to the caller
            runs.finish(db, run, "failed", **detail, seconds=round(time.monotonic() - started, 3),
                        error=f"{type(exc).__name__}: {exc}"[:4000])
            return run
        changes = _changes(before, after)
        return runs.finish(db, run, "ok", **detail, **changes, seconds=round(time.monotonic() - started, 3))


def catalog_tables(catalog: Any) -> list[str]:
    """Every table of the catalog, ``namespace.name``, nested namespaces included (three levels deep)."""
    found: list[str] = []

    def walk(namespace: tuple[str, ...], depth: int) -> None:
        for child in catalog.list_namespaces(namespace) if namespace else catalog.list_namespaces():
            child = tuple(child)
            found.extend(".".join(ident) for ident in catalog.list_tables(child))
            if depth < 3:
                walk(child, depth + 1)

    walk((), 1)
    return sorted(set(found))


def tables_for(config: OperationsConfig, action: str, scope: str, existing: Iterable[str]) -> list[str]:
    """The tables an action runs on: declared ones that list it, and with scope ``all`` every undeclared one."""
    declared = config.declared()
    chosen = [ident for ident, table in declared.items() if action in (table.get("maintenance") or [])]
    if scope == "all":
        chosen += [ident for ident in existing if ident not in declared]
    existing_set = set(existing)
    return [ident for ident in dict.fromkeys(chosen) if ident in existing_set]


def run_job(config: OperationsConfig, creds: Credentials, job: MaintenanceJobConfig | str, *,
            trigger: str = "schedule", table: str | None = None, older_than_s: float | None = None,
            execute: Executor | None = None, waiting: Callable[[str], None] | None = None) -> list[runs.Run]:
    """Run a job (a scheduled one, or an action by name) on each of its tables, or on ``table`` only."""
    if isinstance(job, str):
        found = config.job(job)
        if found is None and job not in ACTIONS:
            known = [j.id for j in config.maintenance] + [a for a in ACTIONS if not config.job(a)]
            raise MaintenanceError(f"unknown maintenance job {job!r}; known: {', '.join(known)}")
        job = found or MaintenanceJobConfig(id=job, action=job, schedule="", scope="all")
    catalog = load_catalog(config, creds)
    s3 = s3_client(config, creds)
    if table is not None:
        targets = [table]
    else:
        targets = tables_for(config, job.action, job.scope, catalog_tables(catalog))
    return [run_action(config, creds, job.action, ident, older_than_s=older_than_s, trigger=trigger, catalog=catalog,
                       s3=s3, execute=execute, waiting=waiting) for ident in targets]
