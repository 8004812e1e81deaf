"""A run: the stream, batch and appender writers as threads against one table (or appenders in processes of their
own, ``run_appender_process``), then the verification of what they acknowledged against the catalog."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakehouse_platform.probes.support.commits.batches import OrderBatches, ProbeBatches, _rows
from lakehouse_platform.probes.support.commits.outcome import Outcome, Workload
from lakehouse_platform.probes.support.commits.verify import verify
from lakehouse_platform.probes.support.commits.writer import TableWriter, instrument, record_commit


def run(catalog_factory: Callable[[], Any], ident: str, workload: Workload | None = None,
        create: bool = True, batches: ProbeBatches | OrderBatches | None = None) -> Outcome:
    """Run the writers against ``ident`` (created here unless ``create=False``) and verify the result."""
    workload = workload or Workload()
    batches = batches or ProbeBatches()
    outcome = Outcome(table=ident)
    lock = threading.Lock()
    try:
        admin = catalog_factory()
        instrument(admin, outcome, lock)
        if create:
            namespace = ident.rsplit(".", 1)[0]
            try:
                admin.create_namespace(namespace)
            except Exception as exc:
                if "AlreadyExists" not in type(exc).__name__:
                    raise
            admin.create_table(ident, batches.schema())
    except Exception as exc:  # noqa: BLE001 - setup failing is the outcome
        outcome.errors.append(f"setup: {type(exc).__name__}: {exc}")
        outcome.problems.append(f"could not create {ident}: {type(exc).__name__}: {exc}")
        return outcome

    deadline = time.monotonic() + workload.duration_s
    stop = threading.Event()

    def commit(table: TableWriter, writer: str, seq: int, rows: int) -> bool:
        return record_commit(table, outcome, lock, writer, seq, batches.rows(writer, seq, rows), workload)

    def writer_for() -> TableWriter:
        catalog = catalog_factory()
        instrument(catalog, outcome, lock)
        return TableWriter(catalog, ident, workload.carry_backoff)

    def stream() -> None:
        table = writer_for()
        seq = 0
        while time.monotonic() < deadline and not stop.is_set():
            tick = time.monotonic()
            if not commit(table, "stream", seq, workload.stream_rows):
                return
            seq += 1
            stop.wait(max(0.0, workload.stream_interval_s - (time.monotonic() - tick)))

    def batch() -> None:
        table = writer_for()
        spacing = workload.duration_s / max(workload.batch_commits, 1)
        for seq in range(workload.batch_commits):
            if time.monotonic() >= deadline or stop.is_set():
                return
            tick = time.monotonic()
            if not commit(table, "batch", seq, workload.batch_rows):
                return
            stop.wait(max(0.0, spacing - (time.monotonic() - tick)))

    def appender(index: int) -> None:
        table = writer_for()
        for seq in range(workload.appender_max_commits):
            if time.monotonic() >= deadline or stop.is_set():
                return
            if not commit(table, f"append-{index}", seq, workload.appender_rows):
                return

    threads = [threading.Thread(target=stream, name="stream")] if workload.stream else []
    if workload.batch_commits:
        threads.append(threading.Thread(target=batch, name="batch"))
    threads += [threading.Thread(target=appender, args=(i,), name=f"append-{i}") for i in range(workload.appenders)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=workload.duration_s + workload.commit_timeout_s + 30)
    stop.set()
    outcome.seconds = time.monotonic() - started
    verify(admin, outcome, batches)
    return outcome


@dataclass(frozen=True)
class AppenderJob:
    """One appender in a process of its own (picklable): where to write, until when, and how (``workload``'s
    appender rows and retry policy)."""

    props: dict[str, str]  # PyIceberg catalog properties
    ident: str
    writer: str
    deadline_epoch: float  # wall clock (time.time()): processes share no monotonic clock
    workload: Workload


def run_appender_process(job: AppenderJob) -> Outcome:
    """An appender loop in this (child) process until the deadline; its own Outcome, not verified.

    The parent merges the children's outcomes (``merge``) and verifies the table once.
    """
    from pyiceberg.catalog import load_catalog

    outcome = Outcome(table=job.ident)
    lock = threading.Lock()
    catalog = load_catalog(job.writer, **job.props)
    instrument(catalog, outcome, lock)
    table = TableWriter(catalog, job.ident, job.workload.carry_backoff)
    seq = 0
    while time.time() < job.deadline_epoch and record_commit(
            table, outcome, lock, job.writer, seq, _rows(job.writer, seq, job.workload.appender_rows), job.workload):
        seq += 1
    return outcome
