"""One writer's commits: its table loaded once and kept, a 409 retried with full-jitter backoff on the same data
files (``TableWriter``), each commit recorded in the run's ``Outcome``, every HTTP answer tallied by status."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import tenacity

from lakehouse_platform.probes.support.commits.outcome import RETRY_BASE_S, RETRY_CAP_S, Commit, Outcome, Workload


class CommitConflict(Exception):
    """Still conflicting (HTTP 409) after every attempt the retry policy allows."""

    def __init__(self, attempts: int, cause: Exception):
        super().__init__(str(cause))
        self.attempts = attempts


def transaction(table: Any) -> Any:
    """A PyIceberg transaction on ``table`` whose metadata is computed once per staged update.

    PyIceberg 0.11.1's ``Transaction.table_metadata`` applies every staged update to the table's metadata and
    deep-copies the result each time it is read, some 35 times per append (profiled: ``bench_contention.py
    --profile``): on a table of 130 snapshots that copying is most of a commit's CPU, and it grows with the
    table's history. The metadata changes only when an update is staged (``_updates``, a tuple replaced then), so
    reading it again before that returns the same value, computed once.
    """
    from pyiceberg.table import Transaction

    class OnceComputed(Transaction):
        _computed: tuple[tuple[Any, ...], Any] | None = None

        @property
        def table_metadata(self) -> Any:
            if self._computed is None or self._computed[0] is not self._updates:
                self._computed = (self._updates, super().table_metadata)
            return self._computed[1]

    return OnceComputed(table)


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
                    with transaction(self.table) as tx, self._producer(tx) as append:
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
