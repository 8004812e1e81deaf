"""The run record: what the scheduler writes and the exporter reads."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.runtime import runs


def test_runs_are_recorded_and_the_latest_per_job_and_target_is_read_back(tmp_path: Path) -> None:
    db = runs.runs_db(tmp_path)
    first = runs.start(db, runs.Run("expire_snapshots", "shop.orders", started_at=100.0))
    runs.finish(db, first, "ok", snapshots_removed=3, files_removed=7, engine_said={"deleted": 7})
    second = runs.start(db, runs.Run("expire_snapshots", "shop.orders", started_at=200.0, trigger="on-demand"))
    runs.finish(db, second, "failed", error="catalog down")
    other = runs.start(db, runs.Run("backup-catalog", "rest-fixture", started_at=150.0))
    latest = runs.latest(db)
    assert [(r.job, r.target, r.status) for r in latest] == [("expire_snapshots", "shop.orders", "failed"),
                                                              ("backup-catalog", "rest-fixture", "running")]
    assert latest[0].trigger == "on-demand" and latest[0].detail == {"error": "catalog down"}
    assert runs.latest(db, "backup-catalog")[0].id == other.id
    assert runs.latest(tmp_path / "nowhere.db") == []
