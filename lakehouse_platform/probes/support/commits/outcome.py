"""What a run of concurrent commits is and what it found: its knobs (``Workload``), each acknowledged commit, the
``Outcome`` (status codes, conflicts, errors, what verification found) and the tallies over it."""

from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass, field
from typing import Any

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
