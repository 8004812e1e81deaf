"""A signal source the exporter cannot read is itself a signal (issue 19, item 5): never swallowed."""

from __future__ import annotations

from lakehouse_platform.runtime import runs
from tests.runtime.test_exporter import make, served

UNREACHABLE = {"type": "rest", "uri": "http://127.0.0.1:9"}  # refused at once: the catalog is not the point here


def source_up(exporter, source: str) -> float | None:
    return served(exporter).get(("lakehouse_signal_source_up", (("source", source),)))


def test_an_unreadable_run_record_is_a_signal_and_is_logged(tmp_path, capsys) -> None:
    record = runs.runs_db(tmp_path)
    record.parent.mkdir(parents=True)
    record.write_text("not a database, as a file a writer of another format left would be")
    exporter = make(UNREACHABLE, tmp_path)
    exporter.probe_once()
    assert source_up(exporter, "runs") == 0
    assert "signal source runs failed: DatabaseError" in capsys.readouterr().err
    exporter.probe_once()  # the same error again is not logged again
    assert "signal source runs failed" not in capsys.readouterr().err


def test_a_run_record_readable_again_comes_back_up(tmp_path, capsys) -> None:
    record = runs.runs_db(tmp_path)
    record.parent.mkdir(parents=True)
    record.write_text("garbage")
    exporter = make(UNREACHABLE, tmp_path)
    exporter.probe_once()
    record.unlink()
    runs.finish(record, runs.start(record, runs.Run(job="expire_snapshots", target="sales.orders")), "ok")
    exporter.probe_once()
    assert source_up(exporter, "runs") == 1
    assert len(exporter.last_runs) == 1


def test_a_source_read_fine_from_the_start_logs_nothing_and_a_recovery_is_said_once(tmp_path, capsys) -> None:
    exporter = make(UNREACHABLE, tmp_path)
    exporter.source_read("runs")
    exporter.source_read("runs")
    assert "signal source runs" not in capsys.readouterr().err
    exporter.source_read("runs", OSError("gone"))
    exporter.source_read("runs")
    exporter.source_read("runs")
    said = capsys.readouterr().err
    assert said.count("signal source runs failed: OSError: gone") == 1
    assert said.count("signal source runs read again") == 1
