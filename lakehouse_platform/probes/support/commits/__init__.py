"""Concurrent commits against one table: the workload of probe 2 and of bench/bench_commits.py.

Writers (threads, each with its own PyIceberg catalog client):

* ``stream``: a streaming writer committing a micro-batch every ``stream_interval_s`` (~2 s);
* ``batch``: a batch job committing a few large appends spread over the run;
* ``append-<i>``: parallel appenders committing small appends back to back.

Each writer keeps its loaded table (``TableWriter``) and writes a batch's data files once; a
``CommitFailedException`` (HTTP 409: someone else committed first) refreshes the table and commits
the same files again, after a full-jitter backoff (tenacity). Anything else — a 5xx, an unknown
commit state — is recorded as an error and the writer stops. Every HTTP response the clients get is
tallied by status code through a hook on their sessions, and the body of any 5xx is kept.

``verify`` then checks the outcome against the catalog: every acknowledged snapshot is in the
table's snapshot log (an ancestor of the current snapshot), every acknowledged batch is in the table
exactly once, and the row count is exactly the sum of acknowledged rows.

What the writers write is a ``Batches``: by default rows of a table the run creates for itself
(``ProbeBatches``); ``OrderBatches`` instead appends tagged orders to a table another writer owns (the
platform's streaming job), so the probe's appenders race the real Flink committer for the same table.

A package by concern: ``outcome`` (the knobs, each commit, the outcome and its tallies), ``batches`` (what is
written), ``writer`` (one writer's commits and retries), ``workload`` (the writers together, in threads or in
processes), ``verify`` (what an outcome must satisfy), ``logs`` (a service's log as evidence). Probes and
benchmarks use it as one module: ``commits.run(...)``, ``commits.Workload``.
"""

from __future__ import annotations

from lakehouse_platform.probes.support.commits.batches import OrderBatches, ProbeBatches, _rows, _schema, zlib_crc
from lakehouse_platform.probes.support.commits.logs import grep_log, log_size
from lakehouse_platform.probes.support.commits.outcome import (
    RETRY_BASE_S,
    RETRY_CAP_S,
    SYMPTOM_NO_SUCH_TABLE,
    Commit,
    Outcome,
    Workload,
    merge,
    per_writer,
    quantile,
    starved,
)
from lakehouse_platform.probes.support.commits.verify import verify
from lakehouse_platform.probes.support.commits.workload import AppenderJob, run, run_appender_process
from lakehouse_platform.probes.support.commits.writer import CommitConflict, TableWriter, instrument, record_commit

__all__ = [
    "RETRY_BASE_S", "RETRY_CAP_S", "SYMPTOM_NO_SUCH_TABLE", "AppenderJob", "Commit", "CommitConflict", "OrderBatches",
    "Outcome", "ProbeBatches", "TableWriter", "Workload", "_rows", "_schema", "grep_log", "instrument", "log_size",
    "merge", "per_writer", "quantile", "record_commit", "run", "run_appender_process", "starved", "verify",
    "zlib_crc",
]
