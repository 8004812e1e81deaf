"""Retention fitted to the write rate: each table's keep_last derived from how often it commits and how often expiry
runs, a rate its retention cannot hold refused naming the key, the sped-up clock only on disposable stacks."""

from __future__ import annotations

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.model.retention import SnapshotRetention, bounds
from lakehouse_platform.services.operations_config import table_bounds
from tests.support.stacks import stack_platform

P = "lakehouse:platform"


def _native(**changes) -> dict:
    platform = stack_platform("native")
    platform.update(changes)
    return platform


def test_each_tables_keep_last_is_its_bound_less_the_commits_between_two_expiry_runs():
    spec = load_platform(stack_platform("native"))
    found = table_bounds(spec)
    # Expiry every 15 minutes; the streams commit every 10 s: 90 commits between two runs, 1.5x of them kept free.
    assert (found["streams.orders"].commits_between_runs, found["streams.orders"].keep_last) == (90, 500 - 135)
    assert found["bookshop.orders_cdc"].keep_last == 365
    assert found["streams.orders"].key == "flink.job.retention"
    assert found["bookshop.orders_cdc"].key == "streams.connectors.1.retention"
    # A declared table whose rate nobody states keeps half its bound; so does any other table.
    assert (found["shop.orders"].commits_between_runs, found["shop.orders"].keep_last) == (None, 250)
    assert found["*"].keep_last == 250 and found["*"].max_age_s == 168 * 3600
    assert found["shop.orders"].owner == "bookshop data engineering"
    assert found["streams.orders"].owner == spec.layers["compute"].owner
    # The size bound follows the count bound unless set: 2 KiB a snapshot and 64 KiB.
    assert found["shop.orders"].max_metadata_bytes == 500 * 2048 + 64 * 1024


def test_a_declared_rate_derives_the_tables_retention():
    platform = stack_platform("native")
    platform["tables"][0].update(commit_interval_s=1, retention={"max_snapshots": 2000, "max_age_hours": 24})
    found = load_platform(platform).table_bounds()["shop.orders"]
    assert (found.commits_between_runs, found.keep_last, found.max_age_s) == (900, 2000 - 1350, 24 * 3600)
    assert found.properties() == {"history.expire.max-snapshot-age-ms": str(24 * 3600 * 1000)}


def test_a_table_that_commits_faster_than_its_expiry_can_hold_is_refused_naming_its_key():
    platform = stack_platform("native")
    platform["maintenance"][0]["schedule"] = "0 3 * * *"  # expiry once a day, the streams commit every 10 s
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert info.value.errors == [
        f"{P}.flink.job.retention.max_snapshots: streams.orders commits every 10 s, 8640 times between two runs of "
        "expire_snapshots (at most 86400 s apart), which max_snapshots 500 cannot hold with room for a late run "
        "(1.5x); run expire_snapshots more often (its maintenance schedule), or raise max_snapshots to at least 12961",
        f"{P}.streams.connectors.1.retention.max_snapshots: bookshop.orders_cdc commits every 10 s, 8640 times "
        "between two runs of expire_snapshots (at most 86400 s apart), which max_snapshots 500 cannot hold with room "
        "for a late run (1.5x); run expire_snapshots more often (its maintenance schedule), or raise max_snapshots "
        "to at least 12961"]
    # Without the streams (Kafka and Flink off) the same schedule holds every table: nothing's rate is known.
    platform["services"].update({"kafka": {"enabled": False}, "flink-jobmanager": {"enabled": False}})
    assert load_platform(platform).maintenance[0].schedule == "0 3 * * *"


def test_an_explicit_keep_last_must_leave_room_for_the_commits_between_two_runs():
    platform = stack_platform("native")
    platform["tables"][0].update(commit_interval_s=10, retention={"max_snapshots": 200, "keep_last": 150})
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert info.value.errors == [
        f"{P}.tables.0.retention.keep_last: shop.orders commits every 10 s, 90 times between two runs of "
        "expire_snapshots (at most 900 s apart): keep_last 150 plus those pass max_snapshots 200; lower keep_last, "
        "raise max_snapshots, or run expire_snapshots more often (its maintenance schedule)"]
    with pytest.raises(ValueError, match="keep_last: 200 is not below max_snapshots 200"):
        SnapshotRetention(max_snapshots=200, keep_last=200)


def test_an_expire_jobs_older_than_days_caps_every_tables_age_and_the_clocks_speedup_shortens_it():
    found = bounds("t.a", "o", "tables.0.retention", SnapshotRetention(max_age_hours=240), 60, 3600.0, 2 * 86400.0, 1)
    assert found.max_age_s == 2 * 86400  # the job's ceiling under the table's own 10 days
    fast = bounds("t.a", "o", "tables.0.retention", SnapshotRetention(max_age_hours=168), 60, 3600 / 168, None, 168)
    assert fast.max_age_s == 3600 and fast.commits_between_runs == 1


def test_the_sped_up_clock_runs_only_on_a_disposable_stack_and_never_on_aws():
    with pytest.raises(ConfigError) as info:
        load_platform(_native(maintenance_speedup=168))
    assert info.value.errors == [
        f"{P}.maintenance_speedup: 168 expires snapshots and removes orphan files 168 times sooner than their "
        "settings say: only on a disposable stack (disposable: true), for benchmarks and drills"]
    spec = load_platform(_native(maintenance_speedup=168, disposable=True))
    assert table_bounds(spec)["streams.orders"].max_age_s == 3600  # a week of age is an hour
    cloud = stack_platform("cloud")
    cloud.update(maintenance_speedup=2, disposable=True)
    with pytest.raises(ConfigError, match="EventBridge Scheduler, which runs on real time"):
        load_platform(cloud)
