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
"""

from __future__ import annotations

import collections
import datetime as dt
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tenacity

SYMPTOM_NO_SUCH_TABLE = "no such table"

# Full jitter (a random wait in [0, min(cap, base * 2^n)]): writers that lost a race spread out
# instead of colliding again. bench/bench_commits.py measured base/cap 0.02/0.5, 0.05/1.0 and 0.1/2.0
# with 8 writers: the same ~2.9 commits/s and a p99 of 10-16 s each, so the probes' old pair stays;
# carrying the backoff into the next commit (TableWriter) cut the p99 by a fifth and left none starved.
# The cap must grow with the writers: 32 writers retrying within 1 s ask for far more attempts than
# the catalog completes, and nearly every attempt conflicts (the load probe's cap is 8 s).
RETRY_BASE_S = 0.05
RETRY_CAP_S = 1.0


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (percentiles, inclusive; 1.0 is the maximum, 0.0 for no values)."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return ordered[0] if ordered else 0.0
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(q * 100) - 1] if q < 1 else ordered[-1]


@dataclass
class Commit:
    writer: str
    seq: int
    rows: int
    snapshot_id: int
    attempts: int
    latency_s: float


@dataclass
class Workload:
    """Knobs of one run; the defaults are probe 2's."""

    duration_s: float = 30.0
    stream: bool = True
    stream_interval_s: float = 2.0
    stream_rows: int = 50
    batch_commits: int = 3
    batch_rows: int = 5_000
    appenders: int = 4
    appender_rows: int = 10
    appender_max_commits: int = 25
    max_attempts: int = 40
    commit_timeout_s: float = 60.0
    retry_cap_s: float = RETRY_CAP_S  # the longest full-jitter wait before a retry
    carry_backoff: bool = True  # a contended writer waits before its next commit (TableWriter)


@dataclass
class Outcome:
    table: str
    commits: list[Commit] = field(default_factory=list)
    conflicts: int = 0  # 409 answers to commits (each one retried)
    statuses: collections.Counter = field(default_factory=collections.Counter)
    errors: list[str] = field(default_factory=list)  # non-retryable failures, one per failed writer attempt
    server_errors: list[str] = field(default_factory=list)  # 5xx response bodies (first ones)
    gave_up: list[str] = field(default_factory=list)
    seconds: float = 0.0
    verified: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    log_evidence: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def retries(self) -> int:
        return sum(c.attempts - 1 for c in self.commits)

    @property
    def five_xx(self) -> int:
        return sum(n for code, n in self.statuses.items() if code >= 500)

    def latency(self, q: float) -> float:
        return quantile([c.latency_s for c in self.commits], q)

    def symptoms(self) -> str:
        return "\n".join(self.errors + self.server_errors + self.log_evidence + self.problems)

    def summary(self) -> str:
        return (f"{len(self.commits)} commits in {self.seconds:.0f}s ({len(self.commits) / max(self.seconds, 1e-9):.1f}/s), "
                f"{self.conflicts} conflicts (409) retried, {self.five_xx} 5xx, p50 {self.latency(0.5) * 1000:.0f} ms, "
                f"p99 {self.latency(0.99) * 1000:.0f} ms")


class ProbeBatches:
    """Rows of the run's own table (writer, seq, row, written_at); every row in it is the run's."""

    def schema(self):
        return _schema()

    def rows(self, writer: str, seq: int, count: int):
        return _rows(writer, seq, count)

    def count(self, table) -> tuple[collections.Counter, int]:
        """(rows per acknowledged batch, rows of the run) in the table."""
        data = table.scan(selected_fields=("writer", "seq")).to_arrow()
        per_batch = collections.Counter(zip(data.column("writer").to_pylist(), data.column("seq").to_pylist(),
                                            strict=True))
        return per_batch, data.num_rows


@dataclass
class OrderBatches:
    """Orders appended to the streaming job's table, each tagged in ``status`` as ``<tag>/<writer>/<seq>``.

    Order ids are negative (the job's own ids count up from 0), so the run's rows never pass for the
    job's; only rows carrying the tag are the run's, and ``cleanup`` deletes them afterwards.
    """

    tag: str

    def schema(self):
        return None  # the job created the table

    def rows(self, writer: str, seq: int, count: int):
        import decimal

        import pyarrow as pa

        base = -(zlib_crc(writer) % 1000 + 1) * 10_000_000 - seq * 10_000
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        return pa.table({
            "order_id": pa.array([base - i for i in range(count)], pa.int64()),
            "customer_id": pa.array([1] * count, pa.int32()),
            "book_isbn": pa.array(["9780000000002"] * count, pa.string()),
            "quantity": pa.array([1] * count, pa.int32()),
            "unit_price": pa.array([decimal.Decimal("1.00")] * count, pa.decimal128(10, 2)),
            "status": pa.array([f"{self.tag}/{writer}/{seq}"] * count, pa.string()),
            "order_ts": pa.array([now] * count, pa.timestamp("us")),
        }, schema=pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("customer_id", pa.int32()),
                             pa.field("book_isbn", pa.string()), pa.field("quantity", pa.int32()),
                             pa.field("unit_price", pa.decimal128(10, 2)), pa.field("status", pa.string()),
                             pa.field("order_ts", pa.timestamp("us"))]))

    def _mine(self, table):
        from pyiceberg.expressions import StartsWith

        return table.scan(row_filter=StartsWith("status", f"{self.tag}/"), selected_fields=("status",)).to_arrow()

    def count(self, table) -> tuple[collections.Counter, int]:
        data = self._mine(table)
        per_batch: collections.Counter = collections.Counter()
        for status in data.column("status").to_pylist():
            _, writer, seq = status.rsplit("/", 2)
            per_batch[(writer, int(seq))] += 1
        return per_batch, data.num_rows

    def cleanup(self, catalog, ident: str) -> int:
        """Delete the run's rows from the job's table (retrying conflicts with the job's commits); rows deleted."""
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.expressions import StartsWith

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(CommitFailedException),
                                     stop=tenacity.stop_after_attempt(20), wait=tenacity.wait_random(0.2, 1.0),
                                     reraise=True)
        for attempt in retrying:
            with attempt:
                table = catalog.load_table(ident)
                mine = self._mine(table).num_rows
                if mine:
                    table.delete(StartsWith("status", f"{self.tag}/"))
        return mine


def zlib_crc(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode())


def _schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType, TimestamptzType

    return Schema(
        NestedField(1, "writer", StringType(), required=False),
        NestedField(2, "seq", IntegerType(), required=False),
        NestedField(3, "row", LongType(), required=False),
        NestedField(4, "written_at", TimestamptzType(), required=False),
    )


def _rows(writer: str, seq: int, count: int):
    import pyarrow as pa

    now = dt.datetime.now(dt.UTC)
    return pa.table({
        "writer": pa.array([writer] * count, pa.string()),
        "seq": pa.array([seq] * count, pa.int32()),
        "row": pa.array(range(count), pa.int64()),
        "written_at": pa.array([now] * count, pa.timestamp("us", tz="UTC")),
    })


class CommitConflict(Exception):
    """Still conflicting (HTTP 409) after every attempt the retry policy allows."""

    def __init__(self, attempts: int, cause: Exception):
        super().__init__(str(cause))
        self.attempts = attempts


@dataclass(frozen=True)
class _Attempt:
    """What a tenacity wait reads of a retry state: the number of the attempt that failed."""

    attempt_number: int


class TableWriter:
    """One writer's handle on a table: loaded once and kept, refreshed only after a conflict.

    PyIceberg updates a table's metadata from each commit's answer, so a writer alone on a table never
    loads it again. A batch's data files are written once: a retry after a 409 refreshes the table and
    commits the same files in a new snapshot (an append), instead of writing the batch again.
    """

    def __init__(self, catalog: Any, ident: str, carry_backoff: bool = True):
        self.catalog = catalog
        self.ident = ident
        self.table: Any = None
        # Conflicts the last commit met. With carry_backoff the next commit first waits as a retry after
        # that many conflicts would: a winner that resets to no wait at all captures the table while the
        # losers back off (the capture effect), so a contended writer yields before it writes again.
        self.carry_backoff = carry_backoff
        self.contention = 0

    def append(self, data: Any, max_attempts: int = 40, timeout_s: float = 60.0,
               retry_cap_s: float = RETRY_CAP_S) -> tuple[int, int]:
        """Commit ``data`` (a pyarrow table) as one snapshot; (snapshot id, attempts). Raises CommitConflict."""
        import uuid

        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.io.pyarrow import _dataframe_to_data_files  # what Table.append writes with (pinned)

        wait = tenacity.wait_random_exponential(multiplier=RETRY_BASE_S, max=retry_cap_s)
        if self.carry_backoff and self.contention:
            time.sleep(wait(_Attempt(self.contention)))
            if self.table is not None:
                self.table.refresh()
        if self.table is None:
            self.table = self.catalog.load_table(self.ident)
        files = list(_dataframe_to_data_files(table_metadata=self.table.metadata, df=data, io=self.table.io,
                                              write_uuid=uuid.uuid4()))
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(CommitFailedException),
            stop=tenacity.stop_after_attempt(max_attempts) | tenacity.stop_after_delay(timeout_s),
            wait=wait, reraise=True,
        )
        attempts = 0
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    if attempts > 1:
                        self.table.refresh()  # after the wait, not before it: the freshest base to commit on
                    with self.table.transaction() as tx, self._producer(tx) as append:
                        for data_file in files:
                            append.append_data_file(data_file)
        except CommitFailedException as exc:
            self.table = None  # the next batch starts from a fresh load
            self.contention = attempts
            raise CommitConflict(attempts, exc) from exc
        except Exception:
            self.table = None  # an unknown state: never trust the kept metadata
            raise
        self.contention = attempts - 1
        return self.table.current_snapshot().snapshot_id, attempts

    def _producer(self, tx: Any) -> Any:
        """A merge append where the table asks for it (``commit.manifest-merge.enabled``), as Table.append does:
        the manifest list then stays under ``commit.manifest.min-count-to-merge`` entries as the table ages."""
        from pyiceberg.table import TableProperties
        from pyiceberg.utils.properties import property_as_bool

        merge = property_as_bool(self.table.metadata.properties, TableProperties.MANIFEST_MERGE_ENABLED,
                                 TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT)
        update = tx.update_snapshot()
        return update.merge_append() if merge else update.fast_append()


def record_commit(table: TableWriter, outcome: Outcome, lock: threading.Lock, writer: str, seq: int, data: Any,
                  workload: Workload) -> bool:
    """Commit ``data`` as ``writer``'s batch ``seq`` (retrying 409s) and record it in ``outcome``, or record why
    it failed; False stops the writer."""
    started = time.monotonic()
    try:
        snapshot_id, attempts = table.append(data, workload.max_attempts, workload.commit_timeout_s,
                                             workload.retry_cap_s)
    except CommitConflict as exc:
        with lock:
            outcome.conflicts += exc.attempts
            outcome.gave_up.append(f"{writer}#{seq}: still conflicting after {exc.attempts} attempts: {exc}")
        return False
    except Exception as exc:  # noqa: BLE001 - 5xx, unknown commit state, storage errors...
        with lock:
            outcome.errors.append(f"{writer}#{seq}: {type(exc).__name__}: {str(exc)[:800]}")
        return False
    with lock:
        outcome.conflicts += attempts - 1
        outcome.commits.append(Commit(writer, seq, data.num_rows, snapshot_id, attempts, time.monotonic() - started))
    return True


def instrument(catalog, outcome: Outcome, lock: threading.Lock) -> None:
    """Tally every HTTP response of this catalog client by status; keep the bodies of 5xx answers."""

    def hook(response, *args, **kwargs):
        with lock:
            outcome.statuses[response.status_code] += 1
            if response.status_code >= 500 and len(outcome.server_errors) < 20:
                outcome.server_errors.append(f"{response.request.method} {response.request.url} -> "
                                             f"{response.status_code}: {response.text[:1500]}")
        return response

    catalog._session.hooks["response"].append(hook)


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


def verify(catalog, outcome: Outcome, batches: ProbeBatches | OrderBatches | None = None) -> None:
    """Every acknowledged commit is in the snapshot log and in the data, once; the count is exact."""
    if outcome.five_xx:
        outcome.problems.append(f"{outcome.five_xx} responses were 5xx (never acceptable): "
                                f"{dict(sorted(outcome.statuses.items()))}")
    if outcome.errors:
        outcome.problems.append(f"{len(outcome.errors)} commit(s) failed with a non-retryable error")
    if outcome.gave_up:
        outcome.problems.append(f"{len(outcome.gave_up)} commit(s) were still conflicting after every retry")
    try:
        table = catalog.load_table(outcome.table)
    except Exception as exc:  # noqa: BLE001
        outcome.problems.append(f"the table cannot be loaded after the run: {type(exc).__name__}: {exc}")
        return
    current = table.current_snapshot()
    lineage: set[int] = set()
    snapshot = current
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    while snapshot is not None:
        lineage.add(snapshot.snapshot_id)
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    acked = {c.snapshot_id for c in outcome.commits}
    missing = sorted(acked - lineage)
    if missing:
        outcome.problems.append(f"{len(missing)} acknowledged snapshot(s) are not in the snapshot log: {missing[:10]}")
    per_batch, num_rows = (batches or ProbeBatches()).count(table)
    expected_rows = sum(c.rows for c in outcome.commits)
    wrong = [(c.writer, c.seq, per_batch.get((c.writer, c.seq), 0), c.rows) for c in outcome.commits
             if per_batch.get((c.writer, c.seq), 0) != c.rows]
    if wrong:
        outcome.problems.append(f"{len(wrong)} acknowledged batch(es) do not appear exactly once "
                                f"(writer, seq, rows found, rows committed): {wrong[:10]}")
    unacked = set(per_batch) - {(c.writer, c.seq) for c in outcome.commits}
    if unacked:
        outcome.problems.append(f"{len(unacked)} batch(es) in the table were never acknowledged: {sorted(unacked)[:10]}")
    if num_rows != expected_rows:
        outcome.problems.append(f"row count {num_rows} != {expected_rows} acknowledged rows")
    outcome.verified = {"snapshots": len(by_id), "lineage": len(lineage), "acknowledged": len(acked),
                        "rows": num_rows, "expected_rows": expected_rows}


def grep_log(path: str | Path | None, needle: str, since_offset: int = 0, limit: int = 5) -> list[str]:
    """Lines of a service log (from byte ``since_offset``) containing ``needle`` (case-insensitive)."""
    if not path:
        return []
    try:
        with open(path, "rb") as handle:
            handle.seek(since_offset)
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    found = [line.strip() for line in text.splitlines() if needle.lower() in line.lower()]
    return found[:limit]


def log_size(path: str | Path | None) -> int:
    try:
        return Path(path).stat().st_size if path else 0
    except OSError:
        return 0


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


def merge(table: str, outcomes: list[Outcome], seconds: float) -> Outcome:
    """One Outcome from several writers' (e.g. one per process)."""
    merged = Outcome(table=table, seconds=seconds)
    for part in outcomes:
        merged.commits += part.commits
        merged.conflicts += part.conflicts
        merged.statuses.update(part.statuses)
        merged.errors += part.errors
        merged.server_errors += part.server_errors
        merged.gave_up += part.gave_up
    return merged


def per_writer(outcome: Outcome) -> dict[str, int]:
    """Acknowledged commits per writer."""
    return dict(sorted(collections.Counter(c.writer for c in outcome.commits).items()))


def starved(outcome: Outcome, writers: list[str], share: float = 0.25) -> list[str]:
    """Writers whose acknowledged commits are below ``share`` of the mean (a writer that got none included)."""
    counts = per_writer(outcome)
    mean = sum(counts.values()) / max(len(writers), 1)
    return [w for w in writers if counts.get(w, 0) < share * mean]
