"""The Flink streaming job as the probes see it: its checkpoints (Flink's REST API) and its commits (the table).

Iceberg's Flink sink commits once per completed checkpoint; each snapshot's summary carries
``flink.job-id`` and ``flink.max-committed-checkpoint-id``. Checkpoint ids restart at 1 for a fresh job
(and continue after a restore), so commits are keyed on (job id, checkpoint id). What the probes allow
for, all seen on this platform: a checkpoint that carried no data makes no snapshot (a Kafka source
with an idle topic; the generator always carries data), triggering can fail while tasks still deploy
(only COMPLETED checkpoints count), and the newest completed checkpoint may still be committing.
Everything comes from the stack outputs (``profiles.host.flink``, ``jobs``) and the streaming writer's own probe
support (``STREAMING_WRITER``'s: its REST client, where its job's step is recorded, its task manager's log).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from lakehouse_platform.probes.support import services
from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.services.capabilities import STREAMING_WRITER


@dataclass
class StreamingJob:
    """The platform's streaming job, from the stack outputs."""

    rest_url: str
    name: str
    table: str
    source: str
    interval_s: int
    recorded_id: str | None
    jar_path: str | None
    entry_class: str | None
    task_log: str | None = None  # the task manager's log (natively), where its committer's retries are
    writer: str = "streaming writer"  # how reports name it (its service's title: Flink)

    def rest(self):
        support = services.support(STREAMING_WRITER)
        assert support is not None, "no service provides the streaming writer"
        return support.FlinkRest(self.rest_url)


def streaming_job(stack: Stack) -> StreamingJob | None:
    """The stack's streaming job, or None when the stack runs no Flink (or runs it where no REST is reachable)."""
    support = services.support(STREAMING_WRITER, stack)
    if support is None:
        return None
    profile = stack.host_profiles.get(support.PROFILE) or {}
    if not profile.get("rest"):
        return None
    job = profile["job"]
    step = (stack.outputs.get("jobs") or {}).get(support.JOB) or {}
    return StreamingJob(rest_url=profile["rest"], name=job["name"], table=job["table"], source=job["source"],
                        interval_s=int(job["checkpoint_interval_s"]), recorded_id=step.get("job_id"),
                        jar_path=step.get("jar_path"), entry_class=step.get("entry_class"),
                        task_log=support.task_log(stack), writer=support.WRITER)


def completed(rest, job_id: str) -> list[int]:
    """Ids of the job's COMPLETED checkpoints in Flink's history (savepoints included), ascending."""
    history = rest.checkpoints(job_id).get("history") or []
    return sorted(int(h["id"]) for h in history if h.get("status") == "COMPLETED")


def wait_for_checkpoints(rest, job_id: str, after: int, count: int, timeout_s: float) -> list[int]:
    """Completed checkpoint ids above ``after`` once there are ``count`` of them (or the timeout passes)."""
    deadline = time.monotonic() + timeout_s
    found: list[int] = []
    while time.monotonic() < deadline:
        found = [c for c in completed(rest, job_id) if c > after]
        if len(found) >= count:
            return found
        time.sleep(1.0)
    return found


def commits(table, job_id: str) -> dict[int, list[int]]:
    """checkpoint id -> snapshot ids the job committed for it (one each, when all is well)."""
    out: dict[int, list[int]] = {}
    for snapshot in table.snapshots():
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        if props.get("flink.job-id") != job_id or "flink.max-committed-checkpoint-id" not in props:
            continue
        out.setdefault(int(props["flink.max-committed-checkpoint-id"]), []).append(snapshot.snapshot_id)
    return out


def wait_committed(load_table, job_id: str, checkpoint: int, timeout_s: float = 30.0):
    """The table once the job's commit for ``checkpoint`` is in it (a commit may still be in flight)."""
    deadline = time.monotonic() + timeout_s
    table = load_table()
    while time.monotonic() < deadline:
        if max(commits(table, job_id), default=0) >= checkpoint:
            return table
        time.sleep(1.0)
        table = load_table()
    return table


@dataclass
class CommitCheck:
    """Flink's completed checkpoints against the table's snapshots, for one window of checkpoints."""

    window: list[int]
    committed: dict[int, list[int]]
    source: str
    problems: list[str] = field(default_factory=list)

    def run(self) -> CommitCheck:
        in_window = {c: self.committed.get(c, []) for c in self.window}
        twice = {c: ids for c, ids in in_window.items() if len(ids) > 1}
        if twice:
            self.problems.append(f"checkpoints committed more than once: {twice}")
        phantom = sorted(c for c in self.committed if self.window and self.window[0] <= c <= self.window[-1]
                         and c not in self.window)
        if phantom:
            self.problems.append(f"snapshots for checkpoints Flink never completed: {phantom}")
        missing = [c for c, ids in in_window.items() if not ids]
        # The generator carries data into every checkpoint; an idle Kafka topic may leave one empty.
        if missing and self.source == "generator":
            self.problems.append(f"completed checkpoints without their snapshot: {missing}")
        return self

    @property
    def snapshots(self) -> int:
        return sum(len(self.committed.get(c, [])) for c in self.window)

    def evidence(self) -> dict[str, Any]:
        return {"completed checkpoints": self.window,
                "snapshots per checkpoint": {c: self.committed.get(c, []) for c in self.window},
                "problems": self.problems}


def failures_since(rest, job_id: str, before: int) -> list[str]:
    """Root causes of the job's failures beyond the first ``before`` (Flink lists the newest first)."""
    causes = rest.exceptions(job_id)
    return causes[: max(0, len(causes) - before)]
