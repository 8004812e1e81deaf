"""Benchmark: a week in an hour. The native platform in steady state under the streams' load, a table committed
every second, and maintenance on a sped-up clock through the platform's own scheduler.

Deploys an isolated copy of the native stack (``bench``: its own ports and state) with:

* ``maintenance_speedup`` (default 168: an hour of the run is a week of the scheduler's clock) and the schedules a
  production stack would keep: expire_snapshots hourly, rewrite_data_files and rewrite_manifests daily,
  remove_orphan_files weekly (so a one-hour run makes 168 expiry runs, 7 compactions, one orphan removal);
* the streams as the native stack runs them: the Flink job (generated orders, a commit per checkpoint, 10 s) and
  the bookshop's CDC (this script makes ``--cdc-rate`` changes a second in PostgreSQL; Debezium, Kafka, the Iceberg
  sink committing every 10 s);
* ``bench.ticks``: a declared table this script appends to every second (PyIceberg, through the catalog gate, as
  the platform's host profiles do), its retention declared from that rate (``commit_interval_s: 1``);
* alerts provoked on purpose, each of which must fire: ``bench.unkept`` (a table no maintenance covers, small
  bounds, written every 5 s for the first 40% of the run: SnapshotCountHigh, MetadataTooLarge, and, never
  compacted, TableHasManySmallFiles), and Debezium's slot held back (its connector paused while WAL is written:
  ReplicationSlotLagging), then released.

It prints, per table: commits, the commit p50 of the first and the last 200 (ticks: each append's wall time as the
writer sees it; the Flink job's and the sink's: Iceberg's own CommitReport of each commit, which their logging
metrics reporter writes to their logs: the whole commit, retries included), and its snapshot count and
metadata.json size over time against the bounds its retention declares; per service: state on disk at start and
end, its growth over the second half projected to 30 days, against its disk budget; resident memory at start and
end; the maintenance runs; every alert that fired. The load average is printed beside: the machine is shared.

Run: .venv/bin/python bench/bench_week.py [--minutes 60] [--speedup 168]
(develop with --minutes 10; the stack is destroyed at the end unless --keep).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sqlite3
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from lakehouse_platform.config import load_platform
from lakehouse_platform.control import commands, isolated
from lakehouse_platform.control.workspace import forget, outputs
from lakehouse_platform.model import DebeziumPostgresSpec, IcebergSinkSpec
from lakehouse_platform.paths import reports_dir
from lakehouse_platform.probes.support import cdc, commits, signals
from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.runtime.exporter.collector import disk_usage, log_usage

STACK = "bench"
TICKS, UNKEPT = "bench.ticks", "bench.unkept"
WINDOW = 200  # commits compared at the start and the end of each table
#: The alerts the run provokes on purpose, and on what: the table no maintenance covers holds too many snapshots,
#: too large a metadata.json, and (never compacted) too many small files, then (no longer written after 40% of the
#: run, against its 5 minutes' freshness) stale; Debezium's slot is held back.
PROVOKED = {"SnapshotCountHigh": UNKEPT, "MetadataTooLarge": UNKEPT, "TableHasManySmallFiles": UNKEPT,
            "TableStale": UNKEPT, "ReplicationSlotLagging": "bookshop_debezium"}
BENCH_OWNER = "bench steady state"
COLUMNS = [{"name": "writer", "type": "string"}, {"name": "seq", "type": "int"}, {"name": "row", "type": "long"},
           {"name": "written_at", "type": "timestamptz"}]


def overrides(speedup: int) -> dict[str, Any]:
    """What the bench's copy of the native stack changes (see the module docstring)."""
    base = isolated.fixture_platform("native")
    sink = IcebergSinkSpec(kind="iceberg-sink", name="bookshop-iceberg", topics=["bookshop.public.orders"],
                           table="bookshop.orders_cdc", retention={"max_snapshots": 150})
    return {
        "maintenance_speedup": speedup,
        "maintenance": [
            {"action": "expire_snapshots", "schedule": "0 * * * *"},
            {"action": "rewrite_data_files", "schedule": "0 4 * * *"},
            {"action": "rewrite_manifests", "schedule": "0 5 * * *"},
            {"action": "remove_orphan_files", "schedule": "0 6 * * 0", "older_than_days": 7},
        ],
        "tables": [
            *base.get("tables", []),
            # Committed every second by this script: its retention is derived from that rate.
            {"namespace": "bench", "name": "ticks", "owner": BENCH_OWNER, "freshness_minutes": 5, "columns": COLUMNS,
             "commit_interval_s": 1, "retention": {"max_snapshots": 150}},
            # No maintenance and small bounds: SnapshotCountHigh and MetadataTooLarge must fire (provoked).
            {"namespace": "bench", "name": "unkept", "owner": BENCH_OWNER, "freshness_minutes": 5, "columns": COLUMNS,
             "maintenance": [], "retention": {"max_snapshots": 40, "max_metadata_size": "40KiB"}},
        ],
        # The streaming job's and the sink's tables reach their steady state within the run (a commit each 10 s).
        "flink": {"job": {"retention": {"max_snapshots": 150}}},
        "streams": {
            "connectors": [DebeziumPostgresSpec(kind="debezium-postgres", name="bookshop-cdc").model_dump(mode="json"),
                           sink.model_dump(mode="json")],
            # Provoked: the bench holds Debezium's slot back by more than this.
            "slot_lag_alert": "16MiB",
        },
    }


# -- what is measured ------------------------------------------------------------------------------------------


@dataclass
class TableSeries:
    """One table over the run."""

    identifier: str
    max_snapshots: int = 0
    max_metadata_bytes: int = 0
    commits: list[tuple[float, float]] = field(default_factory=list)  # (when, seconds)
    source: str = ""  # where its commit times come from
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (when, snapshots, metadata.json bytes)
    attempts: list[int] = field(default_factory=list)


@dataclass
class Run:
    """Everything the run measured; the threads fill it."""

    started: float = field(default_factory=time.time)
    stop: threading.Event = field(default_factory=threading.Event)
    tables: dict[str, TableSeries] = field(default_factory=dict)
    disks: list[tuple[float, dict[str, tuple[int, int]]]] = field(default_factory=list)  # service -> (data, logs)
    alerts: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    loads: list[tuple[float, float]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    cdc_changes: int = 0

    def table(self, identifier: str) -> TableSeries:
        return self.tables.setdefault(identifier, TableSeries(identifier))

    def say(self, text: str) -> None:
        line = f"[{(time.time() - self.started) / 60:5.1f} min] {text}"
        self.events.append(line)
        print(line, flush=True)


def loop(run: Run, every_s: float, work: Any, until: float | None = None) -> threading.Thread:
    """``work()`` every ``every_s`` until the run stops (or ``until``, epoch seconds); an error is said once, and the
    loop goes on."""
    def body() -> None:
        said: set[str] = set()
        while not run.stop.is_set() and (until is None or time.time() < until):
            began = time.monotonic()
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - a benchmark thread keeps measuring
                text = f"{work.__name__}: {type(exc).__name__}: {str(exc)[:200]}"
                if text not in said:
                    said.add(text)
                    run.say(f"error in {text}")
            run.stop.wait(max(0.0, every_s - (time.monotonic() - began)))

    thread = threading.Thread(target=body, daemon=True, name=getattr(work, "__name__", "loop"))
    thread.start()
    return thread


def appender(run: Run, stack: Stack, identifier: str, every_s: float) -> Any:
    """Appends 10 rows to ``identifier`` every ``every_s``, as the host profiles' writer, timing each commit."""
    writer = commits.TableWriter(stack.catalog("bench-writer"), identifier)
    series = run.table(identifier)
    series.source = "each append's wall time, as the writer sees it (PyIceberg through the gate)"
    seq = [0]

    def append() -> None:
        began = time.perf_counter()
        _, attempts = writer.append(commits.ProbeBatches().rows("bench", seq[0], 10))
        series.commits.append((time.time(), time.perf_counter() - began))
        series.attempts.append(attempts)
        seq[0] += 1

    append.__name__ = f"append_{identifier}"
    return append


COMMIT_REPORT = re.compile(r"Received metrics report: CommitReport\{tableName=(?:[^.,]+\.)?(?P<table>[^,]+), .*?"
                           r"totalDuration=(?P<duration>PT[0-9HMS.]+), count=1\}, "
                           r"attempts=CounterResult\{unit=COUNT, value=(?P<attempts>[0-9]+)\}")
DURATION = re.compile(r"^PT(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9.]+)S)?$")


def java_seconds(text: str) -> float:
    """A java.time.Duration's text (``PT0.468S``, ``PT1M2.5S``) in seconds."""
    parts = DURATION.match(text)
    assert parts is not None, text
    return 3600 * float(parts["h"] or 0) + 60 * float(parts["m"] or 0) + float(parts["s"] or 0)


def commit_reports(run: Run, log_file: str, writer: str) -> Any:
    """Each commit of a JVM writer as Iceberg itself reports it (its CommitReport, which the writer's logging
    metrics reporter writes to its log): the table, the commit's whole duration, retries included, its attempts."""
    log = Path(log_file)
    state = {"offset": log.stat().st_size if log.exists() else 0}

    def read() -> None:
        size = log.stat().st_size
        if size < state["offset"]:
            state["offset"] = 0  # the watchdog rotated it
        with log.open("rb") as fh:
            fh.seek(state["offset"])
            chunk = fh.read()
        state["offset"] += len(chunk)
        for found in COMMIT_REPORT.finditer(chunk.decode(errors="replace")):
            series = run.table(found["table"])
            series.source = f"Iceberg's CommitReport of each commit ({writer}): total duration, retries included"
            series.commits.append((time.time(), java_seconds(found["duration"])))
            series.attempts.append(int(found["attempts"]))

    read.__name__ = f"commit_reports_{writer}"
    return read


def table_sampler(run: Run, stack: Stack, bounds: dict[str, Any]) -> Any:
    """Each known table's snapshot count and metadata.json size (one load and one HEAD each)."""
    catalog = stack.catalog("bench-sampler")
    s3 = stack.s3()

    def sample() -> None:
        for identifier, bound in bounds.items():
            series = run.table(identifier)
            series.max_snapshots, series.max_metadata_bytes = bound.max_snapshots, bound.max_metadata_bytes
            try:
                table = catalog.load_table(identifier)
            except Exception:  # noqa: BLE001, S112 - not created yet (the sink makes its table at its first commit)
                continue
            bucket, key = table.metadata_location.removeprefix("s3://").split("/", 1)
            size = int(s3.head_object(Bucket=bucket, Key=key)["ContentLength"])
            series.samples.append((time.time(), len(table.metadata.snapshots), size))

    return sample


def disk_sampler(run: Run, stack: Stack) -> Any:
    """Each service's state on disk: its data dir and its log, as the exporter measures them."""
    services = stack.native["services"]

    def sample() -> None:
        run.disks.append((time.time(), {name: (disk_usage(info["data_dir"]), log_usage(info["log_file"]))
                                        for name, info in services.items()}))
        run.loads.append((time.time(), os.getloadavg()[0]))

    return sample


def alert_watcher(run: Run, prometheus: str) -> Any:
    """Every alert Prometheus fires, first and last seen."""
    def watch() -> None:
        for alert in signals.alerts(prometheus):
            if alert.state != "firing":
                continue
            subject = alert.labels.get("table") or alert.labels.get("service") or alert.labels.get("slot") or ""
            if alert.labels.get("namespace"):
                subject = f"{alert.labels['namespace']}.{subject}"
            seen = run.alerts.setdefault((alert.name, subject), {"first": time.time(), "labels": alert.labels})
            if "last" not in seen:
                run.say(f"alert firing: {alert.name} {subject} (owner {alert.labels.get('owner', '-')})")
            seen["last"] = time.time()

    return watch


def cdc_changes(run: Run, stack: Stack, rate: float) -> Any:
    """Inserts and updates of the bookshop's orders, ``rate`` a second (Debezium -> Kafka -> the sink)."""
    pipe = cdc.pipeline(stack)
    batch = max(1, round(rate * 5))

    def change() -> None:
        record = cdc.Run()
        cdc.make_changes(stack, pipe, batch, rate, seed=int(time.time()), run=record)
        run.cdc_changes += len(record.changes)

    return change


def hold_the_slot(run: Run, stack: Stack, after_s: float, hold_s: float, megabytes: int) -> None:
    """Provoked: pause Debezium's connector, write ``megabytes`` of WAL (logical messages: no rows, nothing
    streamed), keep it paused ``hold_s``, resume."""
    pipe = cdc.pipeline(stack)
    if run.stop.wait(after_s):
        return
    name = pipe.source["name"]
    http = signals.session()
    http.put(f"{pipe.connect_url}/connectors/{name}/pause", timeout=30).raise_for_status()
    run.say(f"provoked: connector {name} paused; writing {megabytes} MB of WAL")
    with cdc.pg_connect(stack, pipe.source["database"]) as conn:
        for _ in range(megabytes):
            conn.execute("SELECT pg_logical_emit_message(true, 'bench', repeat('x', 1000000))")
    run.stop.wait(hold_s)
    http.put(f"{pipe.connect_url}/connectors/{name}/resume", timeout=30).raise_for_status()
    run.say(f"provoked: connector {name} resumed")


def resident(stack: Stack) -> dict[str, int]:
    """Resident bytes of each service's process tree."""
    found = {}
    for name, info in stack.native["services"].items():
        try:
            proc = psutil.Process(info["pid"])
            found[name] = sum(p.memory_info().rss for p in (proc, *proc.children(recursive=True)))
        except psutil.Error:
            found[name] = 0
    return found


# -- the report ------------------------------------------------------------------------------------------------


def p50_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms" if values else "-"


def report(run: Run, stack: Stack, spec: Any, memory: tuple[dict[str, int], dict[str, int]], minutes: float,
           speedup: int) -> dict[str, Any]:
    figures: dict[str, Any] = {"minutes": round(minutes, 1), "speedup": speedup, "tables": {}, "services": {},
                               "alerts": [], "memory": {}}
    print(f"\n== a week in an hour: {minutes:.1f} min at {speedup}x ({minutes * speedup / 60 / 24:.1f} days of "
          f"the scheduler's clock); load average (1 min) {min(v for _, v in run.loads):.1f} - "
          f"{max(v for _, v in run.loads):.1f}, median {statistics.median(v for _, v in run.loads):.1f} (2 cores)")
    print("\n-- tables: commit p50, first and last 200 commits; snapshots and metadata.json against their bounds")
    for identifier, series in sorted(run.tables.items()):
        times = [seconds for _, seconds in series.commits]
        window = min(WINDOW, len(times) // 2)
        first, last = times[:window], times[-window:] if window else []
        ratio = statistics.median(last) / statistics.median(first) if first and last else None
        snaps = [s for _, s, _ in series.samples]
        sizes = [b for _, _, b in series.samples]
        row = {"commits": len(times), "window": window, "p50_first_s": statistics.median(first) if first else None,
               "p50_last_s": statistics.median(last) if last else None, "ratio": ratio,
               "snapshots_max": max(snaps, default=None), "snapshots_end": snaps[-1] if snaps else None,
               "max_snapshots": series.max_snapshots, "metadata_bytes_max": max(sizes, default=None),
               "metadata_bytes_end": sizes[-1] if sizes else None, "max_metadata_bytes": series.max_metadata_bytes,
               "attempts_mean": statistics.fmean(series.attempts) if series.attempts else None,
               "source": series.source}
        figures["tables"][identifier] = row
        within = (max(snaps) <= series.max_snapshots and max(sizes) <= series.max_metadata_bytes) if snaps else None
        print(f"  {identifier:22s} {len(times):5d} commits; p50 first {window} {p50_ms(first)}, last {window} "
              f"{p50_ms(last)}" + (f" ({ratio:.2f}x)" if ratio else "")
              + f"; snapshots max {row['snapshots_max']} (bound {series.max_snapshots}), metadata.json max "
                f"{(row['metadata_bytes_max'] or 0) / 1024:.0f} KiB (bound {series.max_metadata_bytes / 1024:.0f} "
                f"KiB){'' if within is None else (' within' if within else ' OVER')}")
        if series.source:
            print(f"  {'':22s} commit times: {series.source}; attempts per commit "
                  f"{row['attempts_mean'] or 0:.2f}")
        over = [(round((t - run.started) / 60), s, b // 1024) for t, s, b in series.samples[:: max(1, len(
            series.samples) // 8)]]
        print(f"  {'':22s} over time (min, snapshots, KiB): {over}")
    print("\n-- services: state on disk (data dir + log), growth over the second half projected to 30 days (a log "
          "no further than its rotation keeps), disk budget")
    _, start = run.disks[0]
    mid_t, mid = min(run.disks, key=lambda d: abs(d[0] - (run.disks[0][0] + run.disks[-1][0]) / 2))
    end_t, end = run.disks[-1]
    span = max(end_t - mid_t, 1)
    for name in sorted(end):
        (data, logs), (mid_data, mid_logs) = end[name], mid.get(name, (0, 0))
        rate = (data - mid_data) / span  # bytes a second, second half
        log_rate = (logs - mid_logs) / span
        rotation = spec.services[name].logs
        log_cap = rotation.max_bytes * (rotation.keep + 1)
        projected = data + max(rate, 0) * 30 * 86400 + min(logs + max(log_rate, 0) * 30 * 86400, log_cap)
        budget = spec.services[name].disk_bytes
        figures["services"][name] = {"start": sum(start.get(name, (0, 0))), "end": data + logs, "data": data,
                                     "logs": logs, "data_growth_bytes_per_s": rate,
                                     "log_growth_bytes_per_s": log_rate, "projected_30d": projected,
                                     "budget": budget}
        verdict = "" if budget is None else (" under budget" if projected <= budget else " OVER budget")
        print(f"  {name:22s} {sum(start.get(name, (0, 0))) / 1e6:8.1f} MB -> {(data + logs) / 1e6:8.1f} MB (log "
              f"{logs / 1e6:.1f}); data {rate * 3600 / 1e6:+7.2f} MB/h, log {log_rate * 3600 / 1e6:+6.2f} MB/h -> "
              f"{projected / 1e9:6.2f} GB in 30 days; budget "
              f"{'-' if budget is None else f'{budget / 1e9:.2f} GB'}{verdict}")
    others = {"backups": Path(stack.outputs["operations"]["backups"]["dir"]),
              "operations": Path(stack.outputs["operations"]["runs_db"]).parent}
    for label, path in others.items():
        print(f"  {label:22s} {disk_usage(str(path)) / 1e6:8.1f} MB at the end (outside any service's dir)")
    first_memory, last_memory = memory
    figures["memory"] = {"start": sum(first_memory.values()), "end": sum(last_memory.values()),
                         "by_service_end": last_memory}
    print(f"\n-- resident memory: {sum(first_memory.values()) / 1e9:.2f} GB at the start, "
          f"{sum(last_memory.values()) / 1e9:.2f} GB at the end; by service at the end: "
          + ", ".join(f"{n} {v / 1e6:.0f} MB" for n, v in sorted(last_memory.items(), key=lambda x: -x[1])))
    print("\n-- maintenance runs (the run record)")
    db = Path(stack.outputs["operations"]["runs_db"])
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT job, status, count(*) FROM runs GROUP BY job, status ORDER BY job").fetchall()
    figures["maintenance"] = [list(r) for r in rows]
    for job, status, count in rows:
        print(f"  {job:22s} {status:8s} {count}")
    print("\n-- alerts that fired")
    for (name, subject), seen in sorted(run.alerts.items(), key=lambda kv: kv[1]["first"]):
        provoked = PROVOKED.get(name) == subject
        figures["alerts"].append({"alert": name, "subject": subject, "provoked": provoked,
                                  "first_min": (seen["first"] - run.started) / 60,
                                  "last_min": (seen["last"] - run.started) / 60})
        print(f"  {name:26s} {subject:28s} {(seen['first'] - run.started) / 60:5.1f} - "
              f"{(seen['last'] - run.started) / 60:5.1f} min  {'provoked' if provoked else 'NOT PROVOKED'}")
    fired = {(a["alert"], a["subject"]) for a in figures["alerts"]}
    for name, subject in PROVOKED.items():
        if (name, subject) not in fired:
            print(f"  {name:26s} {subject:28s} provoked but NEVER FIRED")
    print(f"\nCDC changes made: {run.cdc_changes}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--speedup", type=int, default=168)
    parser.add_argument("--cdc-rate", type=float, default=2.0, help="bookshop changes a second")
    parser.add_argument("--keep", action="store_true", help="leave the stack deployed (destroy it yourself)")
    args = parser.parse_args()
    # PyIceberg's own attempt to delete the previous metadata.json after each commit is refused to the writer's
    # store key (the catalog deletes old versions itself): one warning a commit.
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    platform, _ = isolated.isolated_platform(STACK, overrides=overrides(args.speedup))
    spec = load_platform(platform)
    bounds = {k: v for k, v in spec.table_bounds(flink_job=True, sinks=True).items() if k != "*"}
    isolated.isolated_stack(STACK, overrides=overrides(args.speedup))
    run = Run()
    try:
        seconds = commands.up(STACK, quiet=True)
        run.started = time.time()
        run.say(f"stack {STACK} up in {seconds:.0f} s; load average {os.getloadavg()[0]:.1f}")
        stack = Stack(outputs=outputs(STACK), name=STACK, run_id=time.strftime("%m%d%H%M%S"))
        prometheus = signals.observability(stack.outputs)["prometheus"]
        memory_start = resident(stack)
        threads = [
            loop(run, 1.0, appender(run, stack, TICKS, 1.0)),
            # Until its alerts have fired (small files: 100 commits and 10 minutes more), then it stays as it is:
            # what it would grow to is no part of the platform's steady state.
            loop(run, 5.0, appender(run, stack, UNKEPT, 5.0), until=run.started + args.minutes * 60 * 0.4),
            *(loop(run, 5.0, commit_reports(run, stack.service_record(service)["log_file"], service))
              for service in ("flink-taskmanager", "kafka-connect")),
            loop(run, 30.0, table_sampler(run, stack, bounds)),
            loop(run, 60.0, disk_sampler(run, stack)),
            loop(run, 15.0, alert_watcher(run, prometheus)),
            loop(run, 0.0, cdc_changes(run, stack, args.cdc_rate)),
            threading.Thread(target=hold_the_slot, daemon=True,
                             args=(run, stack, args.minutes * 60 / 3, 180.0, 24)),
        ]
        threads[-1].start()
        deadline = run.started + args.minutes * 60
        while time.time() < deadline:
            time.sleep(min(60.0, max(0.0, deadline - time.time())))
            ticks = run.table(TICKS)
            run.say(f"ticks {len(ticks.commits)} commits, snapshots {ticks.samples[-1][1] if ticks.samples else '-'}"
                    f"; load {os.getloadavg()[0]:.1f}")
        memory_end = resident(stack)
        run.stop.set()
        for thread in threads:
            thread.join(timeout=60)
        figures = report(run, stack, spec, (memory_start, memory_end), (time.time() - run.started) / 60,
                         args.speedup)
        out = reports_dir() / "bench_week.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps({**figures, "events": run.events}, indent=2, default=str))
        print(f"\nfigures: {out}")
    finally:
        run.stop.set()
        if not args.keep:
            commands.down(STACK, quiet=True)
            forget(STACK)
            isolated.remove_stack_file(STACK)


if __name__ == "__main__":
    main()
