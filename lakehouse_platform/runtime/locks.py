"""One maintenance operation per table at a time, across every process that runs them.

The prototype saw four jobs start on one table in the same second; their before/after counts then
mixed up each other's commits. A lock per table fixes that and leaves other tables in parallel.
The locks are ``flock`` locks on files (``<state>/operations/locks/<table>.lock``), so the
scheduler's threads, an on-demand ``lakehouse maintenance run`` and a restore all
exclude each other; the kernel drops a lock when its holder dies, so a crash never leaves one behind.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import tenacity

POLL_S = 0.5


class LockTimeout(TimeoutError):
    """Another operation held the table's lock for longer than we were willing to wait."""


def lock_path(locks_dir: str | os.PathLike[str], table: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", table)
    return Path(locks_dir) / f"{safe}.lock"


@contextmanager
def table_lock(locks_dir: str | os.PathLike[str], table: str, timeout_s: float = 3600.0,
               waiting: Callable[[str], None] | None = None) -> Iterator[float]:
    """Hold the table's lock; yields the seconds spent waiting for it. ``waiting`` is told once if it must wait."""
    path = lock_path(locks_dir, table)
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(path, "a+") as handle:
        def tell(state: tenacity.RetryCallState) -> None:
            if waiting is not None and state.attempt_number == 1:  # told once, when it must wait
                waiting(f"{table}: waiting for another maintenance operation on it ({path})")

        retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(timeout_s), wait=tenacity.wait_fixed(POLL_S),
                                     retry=tenacity.retry_if_exception_type(BlockingIOError), before_sleep=tell,
                                     reraise=True)
        try:
            retrying(fcntl.flock, handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockTimeout(f"{table}: another maintenance operation held {path} for more than "
                              f"{timeout_s:g}s") from None
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
