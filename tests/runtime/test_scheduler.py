"""The scheduler and maintenance runs for real (APScheduler, flock, the run record); the engine is a stand-in."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime, timedelta
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
    RetentionConfig,
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


# -- retention: expiry by count and by age ---------------------------------------------------------------------


def test_expiry_keeps_the_newest_keep_last_and_nothing_older_than_the_tables_age() -> None:
    retention = RetentionConfig(identifier="shop.orders", keep_last=3, max_age_s=3600.0, max_snapshots=5)
    now = 100_000.0
    # Ten snapshots a minute apart: the third newest is 120 s old, so everything older than it goes.
    minutes = [int((now - 60 * age) * 1000) for age in range(10)]
    assert maintenance.expiry_threshold_s(retention, minutes, now) == 120 + maintenance.THRESHOLD_SLACK_S
    # Fewer than keep_last younger than the age: the age decides (an hour).
    assert maintenance.expiry_threshold_s(retention, minutes[:3], now) == 3600
    hours = [int((now - 3600 * age) * 1000) for age in range(10)]
    assert maintenance.expiry_threshold_s(retention, hours, now) == 3600  # the age is younger than the count's cut


def test_a_scheduled_expiry_runs_with_the_tables_own_threshold(tmp_path: Path) -> None:
    config = config_for(tmp_path).model_copy(update={
        "retention": [RetentionConfig(identifier="shop.orders", keep_last=2, max_age_s=86400.0, max_snapshots=4)],
        "default_retention": RetentionConfig(identifier="*", keep_last=100, max_age_s=86400.0, max_snapshots=200)})
    catalog = FakeCatalog()
    # Three snapshots, 10, 5 and 1 minutes old: keep_last 2 cuts at the 5 minutes old one.
    for snapshot, minutes in zip(catalog.table.metadata.snapshots, (10, 5, 1), strict=True):
        object.__setattr__(snapshot, "timestamp_ms", int((time.time() - 60 * minutes) * 1000))
    executed: list[dict[str, str]] = []
    run = maintenance.run_action(config, Credentials(), "expire_snapshots", "shop.orders", catalog=catalog,
                                 s3=FakeS3(set()), execute=lambda _sql, session: executed.append(session))
    threshold = run.detail["older_than_s"]
    assert 300 + maintenance.THRESHOLD_SLACK_S <= threshold <= 301 + maintenance.THRESHOLD_SLACK_S
    assert executed == [{"fixture.expire_snapshots_min_retention": f"{int(threshold)}s"}]
    assert run.detail["retention"] == {"keep_last": 2, "max_age_s": 86400.0}
    # Any other table: the default retention (keeps 100 of its 3 snapshots: the day decides).
    other = maintenance.run_action(config, Credentials(), "expire_snapshots", "probe.other", catalog=catalog,
                                   s3=FakeS3(set()), execute=lambda _sql, session: executed.append(session))
    assert other.detail["older_than_s"] == 86400 and executed[-1] == {"fixture.expire_snapshots_min_retention": "1d"}


def test_orphan_removal_keeps_its_margin_shortened_only_by_the_clocks_speedup(tmp_path: Path) -> None:
    jobs = [MaintenanceJobConfig(id="remove_orphan_files", action="remove_orphan_files", schedule="0 6 * * 0",
                                 older_than_days=7)]
    executed: list[dict[str, str]] = []
    for speedup in (1, 168):
        config = config_for(tmp_path, jobs).model_copy(update={"speedup": speedup})
        maintenance.run_action(config, Credentials(), "remove_orphan_files", "shop.orders", catalog=FakeCatalog(),
                               s3=FakeS3(set()), execute=lambda _sql, session: executed.append(session))
    assert executed == [{"fixture.remove_orphan_files_min_retention": "7d"},
                        {"fixture.remove_orphan_files_min_retention": "3600s"}]


# -- the sped-up clock -----------------------------------------------------------------------------------------


def test_a_sped_up_clock_fires_the_cron_at_its_pace_never_twice_for_one_moment() -> None:
    origin = datetime(2026, 1, 5, 0, 0, 7, 123457, tzinfo=UTC)
    trigger = scheduler.job_trigger("0 * * * *", 168, origin)
    fires, previous, now = [], None, origin
    for _ in range(200):
        upcoming = trigger.get_next_fire_time(previous, now)
        fires.append(upcoming)
        previous = now = upcoming
    gaps = {round((later - earlier).total_seconds(), 3) for earlier, later in itertools.pairwise(fires)}
    assert gaps == {round(3600 / 168, 3)}  # hourly is every 21.4 s, 200 times in a row
    # Where the virtual clock stands at each fire is exactly what croniter, an independent implementation, says.
    virtual = [origin + (fire - origin) * 168 for fire in fires[:5]]
    expected = croniter("0 * * * *", origin).all_next(datetime)
    assert [v.replace(microsecond=0) for v in virtual] == [next(expected) for _ in range(5)]
    assert not isinstance(scheduler.job_trigger("0 * * * *", 1), scheduler.ScaledTrigger)


def test_the_scheduler_runs_every_job_on_one_sped_up_clock(tmp_path: Path) -> None:
    config = config_for(tmp_path).model_copy(update={"speedup": 168})
    sched = scheduler.build(config, Credentials(), "maintenance")
    sched.start(paused=True)
    try:
        jobs = {j["id"]: j for j in scheduler.describe(sched)}
    finally:
        sched.shutdown(wait=False)
    now = datetime.now(UTC)
    for job_id in ("expire_snapshots", "rewrite_manifests"):  # daily at 3, weekly on Sunday: within 1 h / 168
        due = datetime.fromisoformat(jobs[job_id]["next_run_time"])
        assert timedelta(0) <= due - now <= timedelta(days=7) / 168, (job_id, due - now)
        assert "at 168x" in jobs[job_id]["name"] and "at 168x" in jobs[job_id]["trigger"]


def test_rewriting_the_manifests_of_a_table_never_written_does_nothing_and_fails_nothing(tmp_path: Path) -> None:
    catalog = FakeCatalog()
    catalog.table = FakeTable([])
    catalog.table.current_snapshot = lambda: None  # type: ignore[method-assign]
    executed: list[str] = []
    run = maintenance.run_action(config_for(tmp_path), Credentials(), "rewrite_manifests", "shop.orders",
                                 catalog=catalog, s3=FakeS3(set()), execute=lambda sql, _session: executed.append(sql))
    assert (run.status, executed) == ("ok", [])  # Trino 476 fails it with "snapshot is null"
    assert run.detail["nothing_to_do"] is True and run.detail["reason"] == "the table has no snapshot yet"


def test_a_scheduled_run_is_a_process_of_its_own_recorded_as_any(tmp_path: Path, serve) -> None:
    """The scheduler runs each job as ``python -m lakehouse_platform.runtime maintenance run`` (it never keeps
    PyIceberg, PyArrow and Trino's client itself): a real child on a real SQL catalog, a stand-in Trino that says it
    is up and refuses the statement; the failure is in the run record the child wrote."""
    from pyiceberg.catalog.sql import SqlCatalog

    from tests.support.job_scripts import Answer

    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    catalog = SqlCatalog("operations", **{k: v for k, v in props.items() if k != "type"})
    catalog.create_namespace("shop")
    catalog.create_table("shop.orders", schema=__import__("pyarrow").schema([("id", __import__("pyarrow").int64())]))
    trino = serve(lambda method, path, _h, _b: Answer(200, {"starting": False}) if path == "/v1/info"
                  else Answer(500, {"message": "refused by the stand-in"}))
    host, port = trino.url.removeprefix("http://").split(":")
    jobs = [MaintenanceJobConfig(id="rewrite_manifests", action="rewrite_manifests", schedule="0 5 * * *")]
    config = config_for(tmp_path, jobs).model_copy(update={
        "catalog": CatalogAccess(service="rest-fixture", engine_name="fixture", properties=props),
        "engine": EngineAccess(host=host, port=int(port), catalog="fixture",
                               runtime="lakehouse_platform.services.trino.runtime"), "tables": []})
    path = tmp_path / "operations.json"
    path.write_text(config.dump())
    sched = scheduler.build(config, Credentials(), "maintenance", config_path=str(path))
    sched.get_job("rewrite_manifests").func()  # what a fire runs; the table has no snapshot: nothing to do
    (run,) = runs.latest(Path(config.runs_db), "rewrite_manifests")
    assert (run.status, run.target, run.trigger, run.detail["nothing_to_do"]) == ("ok", "shop.orders", "schedule", True)
    catalog.load_table("shop.orders").append(__import__("pyarrow").table({"id": [1]}))
    sched.get_job("rewrite_manifests").func()
    latest = runs.latest(Path(config.runs_db), "rewrite_manifests")[0]
    assert latest.status == "failed" and "refused by the stand-in" in latest.detail["error"]
    assert [m for m, p, _h, _b in trino.requests if p.startswith("/v1/statement")] == ["POST"]
