"""The record of every platform operation run (maintenance, backups): where observability reads it.

One SQLite file per stack (``<state dir>/operations/runs.db``), written by whatever runs an operation
(the scheduler service, ``lakehouse ...`` on demand) and read by the metrics exporter
("last maintenance run", "maintenance failed") and the probes. SQLite because writers are few and
rare, the file survives restarts of every service, and readers need no server.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["running", "ok", "failed", "skipped"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job TEXT NOT NULL,            -- expire_snapshots, rewrite_data_files, ..., backup-catalog
    target TEXT NOT NULL,         -- the table (namespace.name) or what else the run worked on
    started_at REAL NOT NULL,     -- epoch seconds
    ended_at REAL,
    status TEXT NOT NULL,         -- running | ok | failed | skipped (a missed or overlapping schedule)
    trigger TEXT NOT NULL,        -- schedule | on-demand
    engine TEXT NOT NULL DEFAULT '',
    files_removed INTEGER NOT NULL DEFAULT 0,
    snapshots_removed INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '{}'  -- JSON: what the engine returned, or the error
);
CREATE INDEX IF NOT EXISTS runs_by_job_target ON runs (job, target, started_at);
"""


LATEST = """
SELECT id, job, target, trigger, engine, started_at, ended_at, status, files_removed, snapshots_removed, detail
FROM runs r
WHERE started_at = (SELECT max(started_at) FROM runs s WHERE s.job = r.job AND s.target = r.target)
  AND (? IS NULL OR job = ?)
ORDER BY started_at DESC
"""


def runs_db(state_dir: Path) -> Path:
    """The stack's run record."""
    return state_dir / "operations" / "runs.db"


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, timeout=30)) as con:
        con.execute("PRAGMA journal_mode=WAL")
        con.executescript(SCHEMA)
        yield con


@dataclass
class Run:
    """One run of one operation on one target."""

    job: str
    target: str
    trigger: str = "schedule"
    engine: str = ""
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    status: Status = "running"
    files_removed: int = 0
    snapshots_removed: int = 0
    detail: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


def start(path: Path, run: Run) -> Run:
    """Record that a run started (status running); returns it with its id."""
    with _connect(path) as con, con:
        cursor = con.execute(
            "INSERT INTO runs (job, target, started_at, status, trigger, engine) VALUES (?, ?, ?, ?, ?, ?)",
            (run.job, run.target, run.started_at, run.status, run.trigger, run.engine))
        run.id = cursor.lastrowid
    return run


def finish(path: Path, run: Run, status: Status, **measured: Any) -> Run:
    """Record how a run ended: ok, failed or skipped, what it removed, what the engine said."""
    run.status, run.ended_at = status, time.time()
    run.files_removed = int(measured.pop("files_removed", run.files_removed))
    run.snapshots_removed = int(measured.pop("snapshots_removed", run.snapshots_removed))
    run.detail.update(measured)
    with _connect(path) as con, con:
        con.execute(
            "UPDATE runs SET ended_at=?, status=?, files_removed=?, snapshots_removed=?, detail=? WHERE id=?",
            (run.ended_at, run.status, run.files_removed, run.snapshots_removed, json.dumps(run.detail, default=str),
             run.id))
    return run


def latest(path: Path, job: str | None = None) -> list[Run]:
    """The latest run of each (job, target), newest first; only ``job`` when given."""
    if not path.exists():
        return []
    with _connect(path) as con:
        rows = con.execute(LATEST, (job, job)).fetchall()
    return [_run_of(row) for row in rows]


def _run_of(row: tuple[Any, ...]) -> Run:
    return Run(id=row[0], job=row[1], target=row[2], trigger=row[3], engine=row[4], started_at=row[5],
               ended_at=row[6], status=row[7], files_removed=row[8], snapshots_removed=row[9],
               detail=json.loads(row[10]))


def recent(path: Path, job: str | None = None, target: str | None = None, limit: int = 50) -> list[Run]:
    """The newest runs, newest first; only ``job``'s and ``target``'s when given."""
    if not path.exists():
        return []
    with _connect(path) as con:
        rows = con.execute(
            "SELECT id, job, target, trigger, engine, started_at, ended_at, status, files_removed, "
            "snapshots_removed, detail FROM runs WHERE (? IS NULL OR job = ?) AND (? IS NULL OR target = ?) "
            "ORDER BY started_at DESC, id DESC LIMIT ?", (job, job, target, target, limit)).fetchall()
    return [_run_of(row) for row in rows]
