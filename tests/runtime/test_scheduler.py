"""The scheduler and maintenance runs for real (APScheduler, flock, the run record); the engine is a stand-in."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from croniter import croniter

from lakehouse_platform.runtime import locks, maintenance, runs, scheduler
from lakehouse_platform.runtime.config import (
    CatalogAccess,
    Credentials,
    EngineAccess,
    MaintenanceJobConfig,
    OperationsConfig,
    RecoveryObjectives,
)

DECLARED = [{"namespace": "shop", "name": "orders", "maintenance": ["expire_snapshots", "rewrite_data_files"]},
            {"namespace": "shop", "name": "customers", "maintenance": ["expire_snapshots"]}]


def config_for(tmp_path: Path, jobs: list[MaintenanceJobConfig] | None = None) -> OperationsConfig:
    return OperationsConfig(
        stack="t", target="native", state_dir=str(tmp_path), runs_db=str(tmp_path / "operations" / "runs.db"),
        locks_dir=str(tmp_path / "operations" / "locks"),
        catalog=CatalogAccess(service="rest-fixture", engine_name="fixture", properties={"uri": "http://x"}),
        engine=EngineAccess(host="127.0.0.1", port=1, catalog="fixture", runtime="lakehouse_platform.services.trino.runtime"),
        maintenance=jobs if jobs is not None else [
            MaintenanceJobConfig(id="expire_snapshots", action="expire_snapshots", schedule="0 3 * * *",
                                 older_than_days=7),
            MaintenanceJobConfig(id="rewrite_manifests", action="rewrite_manifests", schedule="0 5 * * 0",
                                 older_than_days=7, scope="declared")],
        tables=DECLARED, recovery=RecoveryObjectives(rpo_minutes=60, rto_minutes=120))


def test_each_job_is_scheduled_on_its_cron_in_utc(tmp_path: Path) -> None:
    sched = scheduler.build(config_for(tmp_path), Credentials(), "maintenance")
    sched.start(paused=True)
    try:
        jobs = {j["id"]: j for j in scheduler.describe(sched)}
    finally:
        sched.shutdown(wait=False)
    now = datetime.now(UTC)
    assert set(jobs) == {"expire_snapshots", "rewrite_manifests"}
    # croniter, an independent cron implementation: "0 5 * * 0" is Sunday (APScheduler's own reader said Monday).
    for job_id, cron in (("expire_snapshots", "0 3 * * *"), ("rewrite_manifests", "0 5 * * 0")):
        expected = croniter(cron, now).get_next(datetime)
        assert datetime.fromisoformat(jobs[job_id]["next_run_time"]) == expected


def test_a_job_that_fires_runs_through_the_executor_and_an_overlapping_fire_is_recorded_skipped(
        tmp_path: Path) -> None:
    config = config_for(tmp_path)
    release, started, calls = threading.Event(), threading.Event(), []

    def slow() -> None:
        calls.append(time.time())
        started.set()
        release.wait(10)

    sched = scheduler.build(config, Credentials(), "maintenance", functions={"expire_snapshots": slow})
    sched.start()
    try:
        sched.get_job("expire_snapshots").modify(next_run_time=datetime.now(UTC))  # the cron fires now
        assert started.wait(10), "the scheduled job never ran"
        sched.get_job("expire_snapshots").modify(next_run_time=datetime.now(UTC))  # fires again while running
        deadline = time.time() + 10
        while time.time() < deadline and not runs.latest(Path(config.runs_db)):
            time.sleep(0.05)
    finally:
        release.set()
        sched.shutdown(wait=True)
    assert len(calls) == 1
    skipped = runs.latest(Path(config.runs_db))
    assert [(r.job, r.status, r.detail["reason"]) for r in skipped] == [
        ("expire_snapshots", "skipped", "previous run still running")]


def test_one_operation_per_table_at_a_time_across_threads_other_tables_in_parallel(tmp_path: Path) -> None:
    spans: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}

    def hold(table: str) -> None:
        with locks.table_lock(tmp_path, table):
            began = time.monotonic()
            time.sleep(0.3)
            spans[table].append((began, time.monotonic()))

    threads = [threading.Thread(target=hold, args=(t,)) for t in ("a", "a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a1, a2), (b,) = sorted(spans["a"]), spans["b"]
    assert a2[0] >= a1[1]  # the second operation on table a waited for the first
    assert b[0] < a1[1]  # table b ran meanwhile
    # Another holder of a (a different open file description, as another process would be) times out.
    with locks.table_lock(tmp_path, "a"), pytest.raises(locks.LockTimeout), \
            locks.table_lock(tmp_path, "a", timeout_s=0.2):
        pass


def test_which_tables_a_job_covers() -> None:
    config = config_for(Path("/nonexistent"))
    existing = ["shop.orders", "shop.customers", "probe.other"]
    assert maintenance.tables_for(config, "expire_snapshots", "all", existing) == [
        "shop.orders", "shop.customers", "probe.other"]
    assert maintenance.tables_for(config, "rewrite_data_files", "all", existing) == ["shop.orders", "probe.other"]
    assert maintenance.tables_for(config, "rewrite_data_files", "declared", existing) == ["shop.orders"]
    assert maintenance.tables_for(config, "rewrite_manifests", "declared", existing) == []  # none declares it
    assert maintenance.tables_for(config, "expire_snapshots", "all", ["shop.orders"]) == ["shop.orders"]


class FakeTable:
    def __init__(self, snapshots: list[tuple[int, str]]):
        from pyiceberg.table.snapshots import Operation, Snapshot, Summary

        self.metadata = type("M", (), {})()
        self.metadata.snapshots = [
            Snapshot(snapshot_id=sid, timestamp_ms=1000 * sid, manifest_list=f"s3://w/t/snap-{sid}.avro",
                     summary=Summary(Operation(op), **{"total-data-files": str(sid)})) for sid, op in snapshots]

    def current_snapshot(self) -> Any:
        return self.metadata.snapshots[-1]

    def location(self) -> str:
        return "s3://w/shop/orders"


class FakeCatalog:
    def __init__(self) -> None:
        self.table = FakeTable([(1, "append"), (2, "append"), (3, "append")])

    def load_table(self, _ident: str) -> FakeTable:
        return self.table


class FakeS3:
    def __init__(self, keys: set[str]):
        self.keys = keys

    def get_paginator(self, _name: str) -> Any:
        keys = self.keys

        class P:
            def paginate(self, Bucket: str, Prefix: str) -> list[dict[str, Any]]:
                return [{"Contents": [{"Key": k} for k in sorted(keys) if k.startswith(Prefix)]}]

        return P()


def test_a_run_is_measured_around_the_engine_and_recorded(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    catalog = FakeCatalog()
    s3 = FakeS3({"shop/orders/data/a.parquet", "shop/orders/data/b.parquet", "shop/orders/metadata/snap-1.avro"})
    executed: list[tuple[str, dict[str, str]]] = []

    def engine(sql: str, session: dict[str, str]) -> None:  # what Trino's expire_snapshots does
        executed.append((sql, session))
        catalog.table = FakeTable([(3, "append"), (4, "replace")])
        s3.keys -= {"shop/orders/data/a.parquet", "shop/orders/metadata/snap-1.avro"}

    run = maintenance.run_action(config, Credentials(), "expire_snapshots", "shop.orders", trigger="on-demand",
                                 catalog=catalog, s3=s3, execute=engine)
    assert executed[0][1] == {"fixture.expire_snapshots_min_retention": "7d"}  # the job's older_than_days
    assert (run.status, run.trigger, run.snapshots_removed, run.files_removed) == ("ok", "on-demand", 2, 2)
    assert run.detail["replace_commits"] == [{"snapshot_id": 4}]
    assert run.detail["removed_files_sample"] == ["shop/orders/data/a.parquet", "shop/orders/metadata/snap-1.avro"]
    recorded = runs.latest(Path(config.runs_db), "expire_snapshots")[0]
    assert (recorded.id, recorded.status, recorded.files_removed) == (run.id, "ok", 2)

    def broken(_sql: str, _session: dict[str, str]) -> None:
        raise RuntimeError("INVALID_PROCEDURE_ARGUMENT: Retention specified (1.00s) is shorter than the minimum")

    failed = maintenance.run_action(config, Credentials(), "expire_snapshots", "shop.orders", catalog=catalog,
                                    s3=s3, execute=broken)
    assert failed.status == "failed" and "INVALID_PROCEDURE_ARGUMENT" in failed.detail["error"]
    assert runs.latest(Path(config.runs_db), "expire_snapshots")[0].status == "failed"


def test_durations() -> None:
    assert [maintenance.parse_duration(t) for t in ("30s", "10m", "2h", "7d")] == [30, 600, 7200, 604800]
    with pytest.raises(ValueError, match="not a duration"):
        maintenance.parse_duration("soon")
