"""Probe 2 — the catalog under concurrent commits (catalog): the chapter's "Breaking it, once".

A streaming writer, a batch job and parallel appenders commit to one table for ~30 s. Where the stack
runs Flink, the streaming writer is the real one: the platform's streaming job, committing once per
checkpoint (every 10 s), while the batch job and the appenders append tagged orders to its table;
otherwise it is a Python thread committing every ~2 s to a table of the probe's own. Every commit must
end in success or in a 409 (CommitFailedException) that is retried; never a 5xx. Afterwards every
acknowledged commit is in the snapshot log (Flink's: one snapshot per completed checkpoint, none lost),
the probe's rows are there exactly once, and the job never failed. The probe's rows are deleted after.

Control: the same probe against a throwaway REST fixture on Book 1's in-memory SQLite URI must FAIL,
naming the symptom ("no such table"): a probe that cannot fail there proves nothing here. Natively, a
second instance of the streaming job writes through that fixture too (the cluster's spare slot), as in
the chapter; its own failure is part of the evidence.

What it found on the file-backed fixture: after a restart on an existing ``fixture.db`` (default pool
of 2 connections), concurrent commits get 500 ``SQLITE_BUSY: database is locked``; with
``CATALOG_CLIENTS=1`` (one pooled connection) they do not. The catalog's own log lines are part of
the evidence (the default catalog's ``native.services.<catalog>.log_file``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from pathlib import Path

import pytest

from lakehouse_platform.probes.support import commits, services
from lakehouse_platform.probes.support import flink as flink_support
from lakehouse_platform.probes.support.fixture import IN_MEMORY_URI, postgres_fixture, throwaway_fixture
from lakehouse_platform.probes.support.stack import Stack, fail

pytestmark = [pytest.mark.catalog, pytest.mark.disruptive(
    "a commit storm: up to 32 appenders beside the streaming writer, on the platform's own streaming table, "
    "and a second catalog and a second streaming job started beside the platform's")]


# The load probe: 32 appenders starting together, one commit each, with a retry budget large enough
# that contention alone never makes one give up (bounded by commit_timeout_s), and a retry cap that
# spreads 32 writers' attempts to what the catalog completes.
LOAD = commits.Workload(duration_s=30, batch_commits=0, appenders=32, appender_rows=10, appender_max_commits=1,
                        max_attempts=400, commit_timeout_s=150, retry_cap_s=8.0)


def _probe(stack: Stack, uri: str | None, ident: str, workload: commits.Workload, log_file: str | None,
           batches: commits.OrderBatches | None = None) -> commits.Outcome:
    overrides = {"uri": uri} if uri else {}
    offset = commits.log_size(log_file)
    # With a real streaming writer on the table, the probe's own stream thread stays home.
    workload = dataclasses.replace(workload, stream=batches is None)
    outcome = commits.run(lambda: stack.catalog(**overrides), ident, workload, create=batches is None,
                          batches=batches)
    for needle in (commits.SYMPTOM_NO_SUCH_TABLE, "SQLITE_", "database is locked"):
        outcome.log_evidence += [f"catalog log: {line}" for line in commits.grep_log(log_file, needle, offset, 3)]
    if outcome.log_evidence and outcome.ok:
        # The clients saw nothing wrong, but the catalog logged SQLite errors: still a finding.
        outcome.problems.append("the catalog logged SQLite errors during the run")
    return outcome


def _evidence(outcome: commits.Outcome) -> dict:
    return {
        "summary": outcome.summary(),
        "status codes": dict(sorted(outcome.statuses.items())),
        "problems": outcome.problems,
        "errors": outcome.errors[:5],
        "5xx bodies": [body[:600] for body in outcome.server_errors[:3]],
        "gave up": outcome.gave_up[:5],
        "log": outcome.log_evidence[:5],
        "verified": outcome.verified,
    }


def test_concurrent_commits_only_succeed_or_retry(stack: Stack, created_tables, figure, say, request):
    workload = commits.Workload(duration_s=request.config.getoption("--commit-seconds"))
    _concurrency(stack, created_tables, figure, say, workload, "commits")


def test_32_writers_and_the_streaming_writer_lose_no_commit(stack: Stack, created_tables, figure, say):
    """Load: 32 appenders at once (one commit each) beside the streaming writer: 0 5xx, every commit present."""
    _concurrency(stack, created_tables, figure, say, LOAD, "load")


def test_the_fixture_on_the_platforms_postgresql_takes_concurrent_commits(stack: Stack, figure, say):
    """``catalog.fixture_backend: postgres``, run for real: the fixture as that backend configures it, on the
    platform's PostgreSQL, takes four appenders' commits with no 5xx and loses none."""
    with postgres_fixture(stack, f"probe-pg-{stack.run_id}") as fixture:
        ident = f"probe_{stack.run_id}.on_postgres"
        workload = commits.Workload(duration_s=10, stream=False, batch_commits=0, appenders=4)
        outcome = _probe(stack, fixture.uri, ident, workload, fixture.log_file)
        outcome.log_evidence += [f"catalog log: {line}" for line in commits.grep_log(fixture.log_file, "PSQLException")]
    say(f"== the fixture on PostgreSQL ({fixture.jdbc_uri}): {outcome.summary()}; verified {outcome.verified}")
    figure(outcome.summary())
    if not outcome.ok or outcome.log_evidence:
        fail(stack, "catalog", "the fixture on the platform's PostgreSQL lost or refused commits", _evidence(outcome))
    say(f"== PASS: {len(outcome.commits)} commits through the JDBC catalog on PostgreSQL, no 5xx, none lost")


def _concurrency(stack: Stack, created_tables, figure, say, workload: commits.Workload, table: str) -> None:
    log_file = stack.service_record(services.default_catalog(stack)).get("log_file")
    job = flink_support.streaming_job(stack)
    if job is not None:
        outcome = _with_the_streaming_job(stack, job, workload, log_file, say)
    else:
        ident = f"probe_{stack.run_id}.{table}"
        created_tables.append(ident)
        outcome = _probe(stack, None, ident, workload, log_file)
    writers = sorted({c.writer for c in outcome.commits} | ({job.writer} if job else set()))
    say(f"== {len(writers)} writers ({', '.join(writers[:6])}{', ...' if len(writers) > 6 else ''}): "
        f"{outcome.summary()}")
    say(f"== status codes: {dict(sorted(outcome.statuses.items()))}; verified {outcome.verified}")
    attempts = max((c.attempts for c in outcome.commits), default=0)
    figure(f"{len(writers)} writers: {outcome.summary()}, max {outcome.latency(1.0):.1f}s, at most {attempts} "
           f"attempts; {outcome.verified.get('rows', '?')} rows exact" if outcome.ok else outcome.summary())
    if not outcome.ok:
        fail(stack, "catalog", "concurrent commits did not all end in success or a retried 409", _evidence(outcome))
    say(f"== PASS: {len(outcome.commits)} acknowledged commits all in the snapshot log, "
        f"{outcome.verified['rows']:,} rows exact, no 5xx")


def _with_the_streaming_job(stack: Stack, job: flink_support.StreamingJob, workload: commits.Workload,
                            log_file: str | None, say) -> commits.Outcome:
    """The batch job and appenders on the streaming job's table, Flink committing every checkpoint meanwhile."""
    rest = job.rest()
    running = rest.find(job.name)
    if running is None:
        fail(stack, "catalog", f"the streaming writer {job.name} is not running: the probe's streaming writer is "
             "missing", {"jobs": rest.jobs()})
    job_id = str(running["jid"])
    failures_before = len(rest.exceptions(job_id))
    before = max(flink_support.completed(rest, job_id), default=0)
    tm_log = job.task_log
    tm_offset = commits.log_size(tm_log)
    # '~' sorts after every lowercase status, so the job's files are pruned by their column bounds.
    batches = commits.OrderBatches(tag=f"~probe-{stack.run_id}")
    say(f"== streaming writer: Flink job {job.name} ({job_id[:8]}), a commit per checkpoint every {job.interval_s}s, "
        f"into {job.table}")
    catalog = stack.catalog()
    try:
        outcome = _probe(stack, None, job.table, workload, log_file, batches)
        window = [c for c in flink_support.completed(rest, job_id) if c > before]
        table = flink_support.wait_committed(lambda: catalog.load_table(job.table), job_id,
                                             window[-1] if window else 0)
        check = flink_support.CommitCheck(window, flink_support.commits(table, job_id), job.source).run()
        outcome.problems += [f"{job.writer}: {p}" for p in check.problems]
        if not window:
            outcome.problems.append(f"{job.writer}: no checkpoint completed in {outcome.seconds:.0f}s")
        lineage = _lineage(table)
        lost = [ids for c in window for ids in check.committed.get(c, []) if ids not in lineage]
        if lost:
            outcome.problems.append(f"{job.writer}: committed snapshots missing from the snapshot log: {lost}")
        failures = flink_support.failures_since(rest, job_id, failures_before)
        if failures:
            outcome.problems.append(f"{job.writer}: the streaming job failed during the run: {failures[:2]}")
        retries = commits.grep_log(tm_log, "Retrying task after failure", tm_offset, 1000)
        outcome.verified[job.writer] = {"checkpoints": window, "snapshots": check.snapshots,
                                     "committer retries (409)": len(retries)}
        say(f"== {job.writer}: checkpoints {window} -> {check.snapshots} snapshots; its committer retried "
            f"{len(retries)} conflicting commit(s)")
        if retries:
            outcome.log_evidence.append(f"flink task manager: {retries[0][:300]}")
            outcome.conflicts += len(retries)
    finally:
        with contextlib.suppress(Exception):
            deleted = batches.cleanup(catalog, job.table)
            say(f"== removed the probe's {deleted:,} rows from {job.table}")
    return outcome


def _lineage(table) -> set[int]:
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    snapshot, seen = table.current_snapshot(), set()
    while snapshot is not None:
        seen.add(snapshot.snapshot_id)
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return seen


def run_in_memory_control(stack: Stack, seconds: float, tag: str) -> tuple[commits.Outcome, str, str]:
    """The probe against a fixture on Book 1's in-memory SQLite URI; returns (outcome, jdbc uri, streaming writer).

    Natively, a second instance of the streaming job writes through that fixture as well (the cluster's
    spare slot); without it (or when it cannot start) the probe's own stream thread is the streaming writer.
    """
    uri = IN_MEMORY_URI.format(tag=tag)
    job = flink_support.streaming_job(stack) if stack.target == "native" else None
    with throwaway_fixture(stack, uri, tag=f"control-{tag}") as fixture, \
            tempfile.TemporaryDirectory(prefix="probe-control-flink-") as state:
        control = _control_job(stack, job, fixture.uri, tag, state) if job else None
        if control is not None and control.table is not None:
            outcome = _probe(stack, fixture.uri, control.table, commits.Workload(duration_s=seconds), fixture.log_file,
                             commits.OrderBatches(tag=f"~control-{tag}"))
        else:
            outcome = _probe(stack, fixture.uri, f"control_{tag}.commits", commits.Workload(duration_s=seconds),
                             fixture.log_file)
        writer = "the probe's stream thread (a commit every ~2 s)"
        if control is not None:
            writer = control.describe()
            control.finish(outcome)
    return outcome, uri, writer


class _ControlJob:
    """A second instance of the streaming job, writing through the control fixture."""

    def __init__(self, rest, name: str, table: str | None, job_id: str | None, error: str | None):
        self.rest, self.name, self.table, self.job_id, self.error = rest, name, table, job_id, error

    def describe(self) -> str:
        if self.table is not None:
            return f"Flink job {self.name} ({(self.job_id or '')[:8]}) into {self.table}, a commit per checkpoint"
        return f"Flink job {self.name} could not run against this catalog: {(self.error or '')[:300]}"

    def finish(self, outcome: commits.Outcome) -> None:
        """Its failures become evidence (they are the symptom too); then it is cancelled."""
        if self.error:
            outcome.errors.append(f"flink control job: {self.error[:800]}")
        if self.job_id:
            for cause in self.rest.exceptions(self.job_id)[:2]:
                outcome.errors.append(f"flink control job: {cause[:800]}")
            with contextlib.suppress(Exception):
                self.rest.cancel(self.job_id, wait_s=30)


def _control_job(stack: Stack, job: flink_support.StreamingJob, fixture_uri: str, tag: str,
                 state: str) -> _ControlJob | None:
    """Submit the control instance (its table created by the job itself); None when the cluster has no room."""
    if not (job.jar_path and job.entry_class and Path(job.jar_path).is_file()):
        return None
    rest = job.rest()
    if rest.overview().get("slots-available", 0) < 1:
        return None
    profile = stack.host_profiles.get("pyiceberg") or {}
    table, name = f"control_{tag}.orders", f"probe-control-{tag}"
    args = ["--catalog-uri", fixture_uri, "--warehouse", stack.warehouse, "--region", profile.get("s3.region", ""),
            "--table", table, "--job-name", name, "--checkpoint-interval", f"{job.interval_s}s",
            "--source", "generator", "--rows-per-second", "50", "--checkpoint-dir", f"file://{state}/checkpoints"]
    if profile.get("s3.endpoint"):
        args += ["--s3-endpoint", profile["s3.endpoint"]]
    try:
        jar_id = rest.upload(Path(job.jar_path), Path(job.jar_path).name)
        job_id = rest.run(jar_id, job.entry_class, args, 1)
    except Exception as exc:  # noqa: BLE001 - main() runs in the job manager: the symptom may come back here
        return _ControlJob(rest, name, None, None, str(exc))
    try:
        rest.wait_running(job_id, 120)
    except Exception as exc:  # noqa: BLE001
        return _ControlJob(rest, name, None, job_id, str(exc))
    time.sleep(1)
    return _ControlJob(rest, name, table, job_id, None)


def test_control_in_memory_sqlite_fails_with_no_such_table(stack: Stack, figure, say, request):
    if stack.target not in ("native", "docker"):
        pytest.skip(f"the control starts a local fixture next to a local store; target {stack.target} has none")
    # throwaway_fixture runs the stack's own fixture build (native.artifacts) and skips where there is none.
    seconds = min(20.0, request.config.getoption("--commit-seconds"))
    outcome, uri, writer = run_in_memory_control(stack, seconds, stack.run_id)
    say(f"== control streaming writer: {writer}")
    symptom_lines = [line for line in outcome.symptoms().splitlines() if commits.SYMPTOM_NO_SUCH_TABLE in line.lower()]
    say(f"== control ({uri}): {outcome.summary()}; probe {'FAILED' if not outcome.ok else 'passed'}")
    if outcome.errors:
        say(f"== control client error: {outcome.errors[0][:300]}")
    if symptom_lines:
        say(f"== control symptom: {symptom_lines[0][:300]}")
    figure(f"in-memory SQLite: probe failed={not outcome.ok}, {outcome.five_xx} 5xx, "
           f"'{commits.SYMPTOM_NO_SUCH_TABLE}' seen {len(symptom_lines)}x")
    if outcome.ok:
        fail(stack, "catalog", "the concurrency probe PASSED against an in-memory SQLite fixture: it cannot tell a "
             "broken catalog from a working one", _evidence(outcome))
    if not symptom_lines:
        fail(stack, "catalog", f"the control failed, but without the '{commits.SYMPTOM_NO_SUCH_TABLE}' symptom",
             _evidence(outcome))
