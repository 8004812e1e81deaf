"""Catalog backups for real: SQLite online backups under concurrent commits, sidecars, retention, the run record."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lakehouse_platform.runtime import backup, recovery, runs
from lakehouse_platform.runtime.config import (
    BackupConfig,
    CatalogAccess,
    Credentials,
    OperationsConfig,
    RecoveryObjectives,
    SqliteSource,
)


def fixture_db(path: Path) -> Path:
    """A database shaped like the REST fixture's (rollback journal, its pointer table)."""
    with closing(sqlite3.connect(path)) as con, con:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("CREATE TABLE iceberg_tables (catalog_name TEXT, table_namespace TEXT, table_name TEXT, "
                    "metadata_location TEXT, PRIMARY KEY (catalog_name, table_namespace, table_name))")
    return path


def config_for(tmp_path: Path, db: Path) -> OperationsConfig:
    return OperationsConfig(
        stack="t", target="native", state_dir=str(tmp_path), runs_db=str(tmp_path / "operations" / "runs.db"),
        locks_dir=str(tmp_path / "operations" / "locks"),
        catalog=CatalogAccess(service="rest-fixture", engine_name="fixture", properties={"uri": "http://x"}),
        backups=BackupConfig(dir=str(tmp_path / "backups"), schedule="*/15 * * * *", retention_days=7,
                             sqlite=[SqliteSource(name="rest-fixture", path=str(db))]),
        recovery=RecoveryObjectives(rpo_minutes=60, rto_minutes=120))


def test_online_backups_are_consistent_while_the_catalog_commits(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "fixture.db")
    stop = threading.Event()
    committed = [0]

    def writer() -> None:  # commits pointer swaps as fast as it can, like a busy catalog
        with closing(sqlite3.connect(db, timeout=30)) as con:
            while not stop.is_set():
                n = committed[0]
                with con:
                    con.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', ?, ?)", (f"t{n}", f"s3://w/{n}"))
                    con.execute("UPDATE iceberg_tables SET metadata_location = metadata_location || '+'")
                committed[0] = n + 1
                time.sleep(0.001)  # a busy catalog, not a spin loop holding the GIL

    thread = threading.Thread(target=writer)
    thread.start()
    taken = []
    try:
        for i in range(6):
            seen, deadline = committed[0], time.monotonic() + 10
            while committed[0] == seen and time.monotonic() < deadline:  # a commit between every two backups,
                time.sleep(0.005)  # even on a loaded machine
            taken.append(backup.backup_sqlite(SqliteSource(name="rest-fixture", path=str(db)), tmp_path / "b",
                                              now=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)))
    finally:
        stop.set()
        thread.join()
    assert committed[0] > 6, "the writer must have committed while the backups ran"
    counts = []
    for taken_backup, detail in taken:
        assert detail["integrity"] == "ok" and taken_backup.verify()
        with closing(sqlite3.connect(f"file:{taken_backup.path}?mode=ro", uri=True)) as con:
            rows = con.execute("SELECT table_name, metadata_location FROM iceberg_tables").fetchall()
        # One transaction inserts row n and updates every row: a copy holding k rows is consistent only
        # if row i went through exactly k - i updates (a torn copy mixes two transactions).
        k = len(rows)
        assert all(location.count("+") == k - int(name[1:]) for name, location in rows), rows
        counts.append(k)
    assert counts == sorted(counts)  # later backups never see fewer commits
    assert detail["source_journal_mode"] in ("delete", "unknown (busy)")


def test_a_backup_never_holds_a_transaction_the_catalog_has_not_committed(tmp_path: Path) -> None:
    """A commit in progress has already written pages into the database file (a cache spill, rollback
    journal mode). The online backup waits for the transaction to end and copies the committed state."""
    db = fixture_db(tmp_path / "fixture.db")
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', 'kept', 's3://w/kept')")
    writer = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    writer.execute("PRAGMA cache_size=1")  # spill dirty pages into the database file before commit
    writer.execute("BEGIN IMMEDIATE")
    for i in range(300):
        writer.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', ?, ?)", (f"uncommitted{i}", "x" * 2000))
    rolled_back = threading.Timer(0.5, lambda: writer.execute("ROLLBACK"))
    rolled_back.start()
    try:
        taken, detail = backup.backup_sqlite(SqliteSource(name="rest-fixture", path=str(db)), tmp_path / "b")
    finally:
        rolled_back.join()
        writer.close()
    with closing(sqlite3.connect(f"file:{taken.path}?mode=ro", uri=True)) as con:
        assert con.execute("SELECT table_name FROM iceberg_tables").fetchall() == [("kept",)]
    assert detail["integrity"] == "ok"


def test_a_writer_stuck_in_a_transaction_fails_the_backup_instead_of_hanging_it(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    db = fixture_db(tmp_path / "fixture.db")
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA cache_size=1")
    writer.execute("BEGIN IMMEDIATE")
    for i in range(300):
        writer.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', ?, ?)", (f"stuck{i}", "x" * 2000))
    monkeypatch.setattr(backup, "SQLITE_BUSY_TIMEOUT_S", 1)
    outcome: list[BaseException | None] = []

    def take() -> None:
        try:
            backup.backup_sqlite(SqliteSource(name="rest-fixture", path=str(db)), tmp_path / "b")
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - inspected below
            outcome.append(exc)

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(15)
    hung = thread.is_alive()
    writer.execute("ROLLBACK")  # releases a hung backup too, so the test never hangs itself
    writer.close()
    thread.join(30)
    assert not hung, "the backup waited on the stuck writer instead of giving up"
    assert isinstance(outcome[0], backup.BackupError) and "stayed locked by a writer" in str(outcome[0])
    assert not list((tmp_path / "b" / "rest-fixture").iterdir())  # no partial file left


def test_a_backup_is_named_checksummed_and_a_tampered_one_is_skipped(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "fixture.db")
    source = SqliteSource(name="rest-fixture", path=str(db))
    first, _ = backup.backup_sqlite(source, tmp_path / "b", now=datetime(2026, 1, 1, 10, tzinfo=UTC))
    second, _ = backup.backup_sqlite(source, tmp_path / "b", now=datetime(2026, 1, 1, 11, tzinfo=UTC))
    assert second.path.name == "fixture-20260101T110000000000Z.db"
    assert second.sidecar.read_text() == f"{backup.sha256_file(second.path)}  {second.path.name}\n"
    assert backup.latest(tmp_path / "b", "rest-fixture") == second
    with open(second.path, "ab") as handle:
        handle.write(b"bit rot")
    assert not second.verify()
    assert backup.latest(tmp_path / "b", "rest-fixture") == first  # the newest that verifies


def test_retention_deletes_old_backups_but_always_keeps_the_newest(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "fixture.db")
    source = SqliteSource(name="rest-fixture", path=str(db))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for day in (0, 3, 8):
        backup.backup_sqlite(source, tmp_path / "b", now=start + timedelta(days=day))
    removed = backup.prune(tmp_path / "b", retention_days=7, now=start + timedelta(days=9))
    assert removed == ["fixture-20260101T000000000000Z.db"]
    assert [b.taken_at.day for b in backup.list_backups(tmp_path / "b")] == [9, 4]
    assert not list((tmp_path / "b" / "rest-fixture").glob("fixture-20260101T*"))  # the sidecar went too
    # Even when every backup is older than the retention, the newest stays: a restore needs one.
    backup.prune(tmp_path / "b", retention_days=7, now=start + timedelta(days=60))
    assert [b.taken_at.day for b in backup.list_backups(tmp_path / "b")] == [9]


def test_backup_all_records_each_database_as_a_run(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "fixture.db")
    config = config_for(tmp_path, db)
    done = backup.backup_all(config, Credentials(), trigger="on-demand")
    assert [(r.job, r.target, r.status, r.trigger) for r in done] == [
        ("backup-catalog", "rest-fixture", "ok", "on-demand")]
    latest = runs.latest(Path(config.runs_db), "backup-catalog")[0]
    assert latest.detail["catalog_tables"] == 0 and latest.detail["sha256"] == backup.sha256_file(
        Path(latest.detail["file"]))
    db.unlink()
    failed = backup.backup_all(config, Credentials())
    assert failed[0].status == "failed" and "no database at" in failed[0].detail["error"]


def test_a_restored_backup_replaces_the_database_and_drops_a_stale_journal(tmp_path: Path) -> None:
    db = fixture_db(tmp_path / "fixture.db")
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("INSERT INTO iceberg_tables VALUES ('c', 'ns', 't', 's3://w/t/00001.metadata.json')")
    taken, _ = backup.backup_sqlite(SqliteSource(name="rest-fixture", path=str(db)), tmp_path / "b")
    db.unlink()
    Path(f"{db}-journal").write_bytes(b"a hot journal of the lost database")
    recovery.place_sqlite_backup(taken.path, db, taken.recorded_sha256())
    assert not Path(f"{db}-journal").exists()
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("SELECT metadata_location FROM iceberg_tables").fetchall() == [
            ("s3://w/t/00001.metadata.json",)]
    with pytest.raises(recovery.RecoveryError, match="sha256 does not match"):
        recovery.place_sqlite_backup(taken.path, db, "0" * 64)
