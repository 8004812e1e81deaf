"""Probe 2 — the catalog under concurrent commits (catalog).

A streaming writer (a commit every ~2 s), a batch job and parallel appenders commit to one table for
~30 s. Every commit must end in success or in a 409 (CommitFailedException) that is retried; never a
5xx. Afterwards every acknowledged commit is in the snapshot log and the row count is exact.

Control: the same probe against a throwaway REST fixture on Book 1's in-memory SQLite URI must FAIL,
naming the symptom ("no such table"): a probe that cannot fail there proves nothing here.

What it found on the file-backed fixture: after a restart on an existing ``fixture.db`` (default pool
of 2 connections), concurrent commits get 500 ``SQLITE_BUSY: database is locked``; with
``CATALOG_CLIENTS=1`` (one pooled connection) they do not. The catalog's own log lines are part of
the evidence (``native.services["rest-fixture"].log_file``).
"""

from __future__ import annotations

import pytest

from platform_tests.support import commits
from platform_tests.support.fixture import IN_MEMORY_URI, throwaway_fixture
from platform_tests.support.stack import Stack, fail

pytestmark = [pytest.mark.catalog]


def _probe(stack: Stack, uri: str | None, ident: str, seconds: float, log_file: str | None) -> commits.Outcome:
    overrides = {"uri": uri} if uri else {}
    offset = commits.log_size(log_file)
    outcome = commits.run(lambda: stack.catalog(**overrides), ident, commits.Workload(duration_s=seconds))
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
    seconds = request.config.getoption("--commit-seconds")
    ident = f"probe_{stack.run_id}.commits"
    created_tables.append(ident)
    log_file = stack.service_record("rest-fixture").get("log_file")
    outcome = _probe(stack, None, ident, seconds, log_file)
    writers = sorted({c.writer for c in outcome.commits})
    say(f"== {len(writers)} writers: {outcome.summary()}")
    say(f"== status codes: {dict(sorted(outcome.statuses.items()))}; verified {outcome.verified}")
    figure(f"{outcome.summary()}; {outcome.verified.get('rows', '?')} rows exact" if outcome.ok else outcome.summary())
    if not outcome.ok:
        fail(stack, "catalog", "concurrent commits did not all end in success or a retried 409", _evidence(outcome))
    say(f"== PASS: {len(outcome.commits)} acknowledged commits all in the snapshot log, "
        f"{outcome.verified['rows']:,} rows exact, no 5xx")


def run_in_memory_control(stack: Stack, seconds: float, tag: str) -> tuple[commits.Outcome, str]:
    """The probe against a fixture on Book 1's in-memory SQLite URI; returns (outcome, jdbc uri)."""
    uri = IN_MEMORY_URI.format(tag=tag)
    with throwaway_fixture(stack, uri, tag=f"control-{tag}") as fixture:
        outcome = _probe(stack, fixture.uri, f"control_{tag}.commits", seconds, fixture.log_file)
    return outcome, uri


def test_control_in_memory_sqlite_fails_with_no_such_table(stack: Stack, figure, say, request):
    if stack.target not in ("native", "docker"):
        pytest.skip(f"the control starts a local fixture next to a local store; target {stack.target} has none")
    # throwaway_fixture runs the stack's own fixture build (native.artifacts) and skips where there is none.
    seconds = min(20.0, request.config.getoption("--commit-seconds"))
    outcome, uri = run_in_memory_control(stack, seconds, stack.run_id)
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
