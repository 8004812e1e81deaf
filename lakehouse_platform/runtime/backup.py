"""Catalog backups (recovery layer): consistent copies of the catalogs' databases, checksummed, kept per the promise.

* The REST fixture's SQLite file: SQLite's online backup API (``sqlite3.Connection.backup``) in one
  step, i.e. one read transaction: a consistent copy while the fixture keeps committing (its
  database uses a rollback journal; the copy is checked with ``PRAGMA integrity_check``).
* The production catalogs' PostgreSQL databases: ``pg_dump -Fc`` (one snapshot per dump).

Each backup is one file under ``<backups>/<source>/`` named ``<database>-<UTC time>.<db|dump>``,
beside a ``.sha256`` sidecar in ``sha256sum`` form (``sha256sum -c`` checks it). Backups older than
the recovery layer's ``backup_retention_days`` are deleted, except the newest of each source, which
is always kept. The backups live under the stack's state directory, outside every service's own
directory, so losing a catalog's directory does not lose its backups. Every backup is a run in the
run record (job ``backup-catalog``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse_platform.runtime import runs
from lakehouse_platform.runtime.config import Credentials, OperationsConfig, PostgresSource, SqliteSource

JOB = "backup-catalog"
STAMP = "%Y%m%dT%H%M%S%fZ"
NAME = re.compile(r"^(?P<database>[a-z0-9_.-]+)-(?P<stamp>\d{8}T\d{12}Z)\.(?P<ext>db|dump)$")
PG_DUMP_TIMEOUT_S = 600
SQLITE_BUSY_TIMEOUT_S = 120


class BackupError(RuntimeError):
    """A backup could not be taken or does not verify."""


@dataclass(frozen=True)
class Backup:
    """One backup file and what its name and sidecar say about it."""

    path: Path
    source: str  # the directory under <backups>: the catalog service (rest-fixture) or postgres
    database: str
    taken_at: datetime
    kind: str  # sqlite | pg_dump

    @property
    def sidecar(self) -> Path:
        return self.path.with_name(self.path.name + ".sha256")

    def recorded_sha256(self) -> str | None:
        try:
            return self.sidecar.read_text().split()[0]
        except (OSError, IndexError):
            return None

    def verify(self) -> bool:
        """The file's sha256 equals its sidecar's."""
        recorded = self.recorded_sha256()
        return recorded is not None and self.path.exists() and sha256_file(self.path) == recorded

    def describe(self) -> dict[str, Any]:
        return {"file": str(self.path), "source": self.source, "database": self.database, "kind": self.kind,
                "taken_at": self.taken_at.isoformat(timespec="seconds"),
                "bytes": self.path.stat().st_size if self.path.exists() else None,
                "sha256": self.recorded_sha256()}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_sidecar(path: Path) -> str:
    digest = sha256_file(path)
    tmp = path.with_name(path.name + ".sha256.tmp")
    tmp.write_text(f"{digest}  {path.name}\n")
    os.replace(tmp, path.with_name(path.name + ".sha256"))
    return digest


def _stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime(STAMP)


def parse(path: Path) -> Backup | None:
    match = NAME.match(path.name)
    if not match:
        return None
    taken = datetime.strptime(match["stamp"], STAMP).replace(tzinfo=UTC)
    return Backup(path=path, source=path.parent.name, database=match["database"], taken_at=taken,
                  kind="sqlite" if match["ext"] == "db" else "pg_dump")


def list_backups(backups_dir: str | os.PathLike[str], source: str | None = None) -> list[Backup]:
    """Every backup (sidecar or not), newest first; only ``source``'s when given."""
    root = Path(backups_dir)
    dirs = [root / source] if source else [d for d in root.iterdir() if d.is_dir()] if root.exists() else []
    found = [b for d in dirs if d.exists() for p in d.iterdir() if (b := parse(p)) is not None]
    return sorted(found, key=lambda b: b.taken_at, reverse=True)


def latest(backups_dir: str | os.PathLike[str], source: str, database: str | None = None) -> Backup | None:
    """The newest backup of a source (and database) whose checksum verifies."""
    for backup in list_backups(backups_dir, source):
        if (database is None or backup.database == database) and backup.verify():
            return backup
    return None


def backup_sqlite(source: SqliteSource, backups_dir: str | os.PathLike[str],
                  now: datetime | None = None) -> tuple[Backup, dict[str, Any]]:
    """A consistent copy of a live SQLite catalog (online backup, one step) with its sidecar."""
    src = Path(source.path)
    if not src.exists():
        raise BackupError(f"{source.name}: no database at {src} (is the catalog running?)")
    dest_dir = Path(backups_dir) / source.name
    dest_dir.mkdir(parents=True, exist_ok=True)
    final = dest_dir / f"{src.stem}-{_stamp(now)}.db"
    partial = final.with_name(final.name + ".partial")
    started = time.perf_counter()
    # Read-only URI: the backup never writes to the catalog's file. pages=-1 copies the whole database
    # in one step, under one read transaction, so commits in between cannot tear the copy.
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S

    def give_up_when_stuck(_status: int, _remaining: int, _total: int) -> None:
        # Python retries a busy step forever; a writer stuck in a transaction must not hang the backup job.
        if time.monotonic() > deadline:
            raise BackupError(f"{source.name}: {src} stayed locked by a writer for {SQLITE_BUSY_TIMEOUT_S}s")

    with closing(sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=1)) as live, \
            closing(sqlite3.connect(partial)) as copy:
        try:
            live.backup(copy, pages=-1, progress=give_up_when_stuck)
        except BackupError:
            copy.close()
            partial.unlink(missing_ok=True)
            raise
        try:  # informational; a busy catalog may hold the lock again at once
            journal_mode = live.execute("PRAGMA journal_mode").fetchone()[0]
        except sqlite3.OperationalError:
            journal_mode = "unknown (busy)"
    with closing(sqlite3.connect(f"file:{partial}?mode=ro", uri=True)) as check:
        integrity = check.execute("PRAGMA integrity_check").fetchone()[0]
        tables = _count(check, "SELECT count(*) FROM iceberg_tables")
    if integrity != "ok":
        partial.unlink(missing_ok=True)
        raise BackupError(f"{source.name}: the copy of {src} fails PRAGMA integrity_check: {integrity}")
    os.replace(partial, final)
    digest = _write_sidecar(final)
    backup = parse(final)
    assert backup is not None
    return backup, {"seconds": round(time.perf_counter() - started, 3), "bytes": final.stat().st_size,
                    "sha256": digest, "integrity": integrity, "catalog_tables": tables,
                    "source_journal_mode": journal_mode, "file": str(final)}


def _count(connection: sqlite3.Connection, sql: str) -> int | None:
    try:
        return int(connection.execute(sql).fetchone()[0])
    except sqlite3.Error:
        return None  # a catalog that never created its tables yet


def _pg_tool(pg: PostgresSource, tool: str) -> str:
    if pg.bindir:
        return str(Path(pg.bindir) / tool)
    found = shutil.which(tool)
    if not found:
        raise BackupError(f"{tool} is not on PATH and the stack names no PostgreSQL bindir")
    return found


def pg_env(creds: Credentials, dump: bool = False) -> dict[str, str]:
    """The PostgreSQL tools' environment: the superuser's password (a restore), or with ``dump`` the backups' least
    role's (a dump; from a release before that role, the superuser's)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TZ")}
    password = (creds.dump_password or creds.postgres_password) if dump else creds.postgres_password
    if password:
        env["PGPASSWORD"] = password
    return env


#: Where the pg_dumps are kept under the backups directory (a kind of backup, not a service's name).
PG_DUMPS = "postgres"  # not the service: the pg_dump backups' directory


def backup_postgres(pg: PostgresSource, database: str, creds: Credentials, backups_dir: str | os.PathLike[str],
                    now: datetime | None = None) -> tuple[Backup, dict[str, Any]]:
    """``pg_dump -Fc`` of one catalog database, with its sidecar."""
    dest_dir = Path(backups_dir) / PG_DUMPS
    dest_dir.mkdir(parents=True, exist_ok=True)
    final = dest_dir / f"{database}-{_stamp(now)}.dump"
    partial = final.with_name(final.name + ".partial")
    started = time.perf_counter()
    argv = [_pg_tool(pg, "pg_dump"), "-h", pg.host, "-p", str(pg.port), "-U", pg.dump_user or pg.user, "-d", database,
            "-Fc",
            "--no-password", "-f", str(partial)]
    done = subprocess.run(argv, env=pg_env(creds, dump=pg.dump_user is not None), capture_output=True, text=True,
                          timeout=PG_DUMP_TIMEOUT_S,
                          check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BackupError(f"pg_dump of {database} failed (exit {done.returncode}): {done.stderr.strip()[-1000:]}")
    os.replace(partial, final)
    digest = _write_sidecar(final)
    backup = parse(final)
    assert backup is not None
    return backup, {"seconds": round(time.perf_counter() - started, 3), "bytes": final.stat().st_size,
                    "sha256": digest, "file": str(final)}


def prune(backups_dir: str | os.PathLike[str], retention_days: float, now: datetime | None = None) -> list[str]:
    """Delete backups older than the retention (and their sidecars); the newest of each database stays."""
    now = now or datetime.now(UTC)
    removed: list[str] = []
    newest: set[tuple[str, str]] = set()
    for backup in list_backups(backups_dir):  # newest first
        key = (backup.source, backup.database)
        if key not in newest:
            newest.add(key)
            continue
        if (now - backup.taken_at).total_seconds() > retention_days * 86400:
            backup.path.unlink(missing_ok=True)
            backup.sidecar.unlink(missing_ok=True)
            removed.append(backup.path.name)
    return removed


def _record(config: OperationsConfig, target: str, trigger: str, engine: str, take: Any) -> runs.Run:
    db = Path(config.runs_db)
    run = runs.start(db, runs.Run(job=JOB, target=target, trigger=trigger, engine=engine))
    try:
        backup, detail = take()
    except Exception as exc:  # noqa: BLE001 - recorded as a failed run
        return runs.finish(db, run, "failed", error=f"{type(exc).__name__}: {exc}"[:4000])
    return runs.finish(db, run, "ok", **detail, taken_at=backup.taken_at.isoformat())


def backup_all(config: OperationsConfig, creds: Credentials, trigger: str = "schedule",
               now: datetime | None = None) -> list[runs.Run]:
    """Back up every catalog database of the stack, then prune per the retention; one run per database."""
    plan = config.backups
    if plan is None:
        return []
    done: list[runs.Run] = []
    for source in plan.sqlite:
        done.append(_record(config, source.name, trigger, "sqlite online backup",
                            lambda s=source: backup_sqlite(s, plan.dir, now)))
    if plan.postgres is not None:
        pg = plan.postgres
        for database in pg.databases:
            done.append(_record(config, f"postgres/{database}", trigger, "pg_dump",
                                lambda d=database: backup_postgres(pg, d, creds, plan.dir, now)))
    pruned = prune(plan.dir, plan.retention_days, now)
    if pruned and done:
        last = done[-1]
        runs.finish(Path(config.runs_db), last, last.status, pruned=pruned)
    return done


def verify_all(backups: Iterable[Backup]) -> list[dict[str, Any]]:
    return [{**b.describe(), "verified": b.verify()} for b in backups]
