"""Probe 8 (Flink half) — the streaming writer commits once per checkpoint (compute).

The platform's own streaming job (``profiles.host.flink``, ``jobs.flink-orders-job``) must be RUNNING
with the job id the stack recorded. Over at least three checkpoints completed while the probe watches,
the table gains exactly one snapshot per completed checkpoint (the snapshot summary's
``flink.max-committed-checkpoint-id``, for this ``flink.job-id``) and none for a checkpoint Flink never
completed. Then four engines read the newest of those snapshots, pinned by id: PyIceberg, DuckDB,
Trino and Spark count the same rows. With the generator as source, order ids are unique too: a
resubmitted job that started over instead of restoring would have written them twice.
"""

from __future__ import annotations

import time

import pytest

from lakehouse_platform.probes.support import engines, services
from lakehouse_platform.probes.support import flink as flink_support
from lakehouse_platform.probes.support.stack import Stack, fail

# Safe: it watches the running job's checkpoints and commits, and reads the table at one snapshot.
pytestmark = [pytest.mark.compute, pytest.mark.safe]

CHECKPOINTS = 3


@pytest.fixture(scope="module")
def job(stack: Stack) -> flink_support.StreamingJob:
    found = flink_support.streaming_job(stack)
    if found is None:
        pytest.skip(f"stack {stack.name or '?'} ({stack.target}) has no Flink REST API in its profiles: no streaming "
                    "job here (on aws the job runs in Managed Service for Apache Flink)")
    return found


def test_streaming_job_commits_once_per_checkpoint_and_four_engines_read_it(stack: Stack, job, figure, say):
    rest = job.rest()
    running = rest.find(job.name)
    if running is None:
        fail(stack, "compute", f"the streaming job {job.name} is not running on {job.rest_url}",
             {"jobs": rest.jobs(), "recorded job id": job.recorded_id})
    job_id = str(running["jid"])
    if job.recorded_id and job.recorded_id != job_id:
        fail(stack, "compute", "Flink runs another job than the one the stack recorded (the deployment lost track "
             "of its job: run `pulumi up`)", {"recorded": job.recorded_id, "running": job_id})
    failures_before = len(rest.exceptions(job_id))
    before = max(flink_support.completed(rest, job_id), default=0)
    timeout = (CHECKPOINTS + 2) * job.interval_s + 60
    started = time.monotonic()
    window = flink_support.wait_for_checkpoints(rest, job_id, before, CHECKPOINTS, timeout)
    say(f"== {job.name} ({job.source}, every {job.interval_s}s): checkpoints {window} completed in "
        f"{time.monotonic() - started:.0f}s")
    if len(window) < CHECKPOINTS:
        fail(stack, "compute", f"fewer than {CHECKPOINTS} checkpoints completed in {timeout}s",
             {"completed": window, "counts": rest.checkpoints(job_id).get("counts"),
              "failures": rest.exceptions(job_id)[:3]})

    catalog = stack.catalog()
    table = flink_support.wait_committed(lambda: catalog.load_table(job.table), job_id, window[-1])
    check = flink_support.CommitCheck(window, flink_support.commits(table, job_id), job.source).run()
    new_failures = flink_support.failures_since(rest, job_id, failures_before)
    if new_failures:
        check.problems.append(f"the job failed while the probe watched: {new_failures[:2]}")
    say(f"== snapshots per completed checkpoint: "
        f"{ {c: len(check.committed.get(c, [])) for c in window} } (flink.job-id {job_id[:8]})")
    if check.problems:
        fail(stack, "compute", "the streaming writer did not commit exactly once per completed checkpoint",
             check.evidence())

    # -- four engines read the newest of those snapshots ------------------------------------------------------
    snapshot_id = check.committed[window[-1]][0] if check.committed.get(window[-1]) else \
        next(ids[0] for c, ids in sorted(check.committed.items(), reverse=True) if c in window and ids)
    scan = table.scan(snapshot_id=snapshot_id, selected_fields=("order_id",)).to_arrow()
    counts = {"pyiceberg": scan.num_rows}
    distinct = len(set(scan.column("order_id").to_pylist()))
    namespace, name = job.table.split(".", 1)
    con, _ = engines.duckdb_connect(stack)
    try:
        counts["duckdb"] = con.execute(
            f"SELECT count(*) FROM {engines.SPARK_CATALOG}.{namespace}.{name} AT (VERSION => {snapshot_id})").fetchone()[0]
    finally:
        con.close()
    for engine in services.engines(stack):  # the engine services of the stack (Trino)
        counts[engine.name] = engine.count(None, namespace, name, snapshot_id)
    spark = engines.spark_session(stack)
    counts[engines.SPARK] = spark.sql(f"SELECT count(*) FROM {engines.SPARK_CATALOG}.{job.table} "
                                f"VERSION AS OF {snapshot_id}").collect()[0][0]
    say(f"== counts at snapshot {snapshot_id}: {counts}; {distinct:,} distinct order ids")
    figure(f"{len(window)} checkpoints -> {check.snapshots} snapshots ({window[0]}..{window[-1]}); "
           f"{counts['pyiceberg']:,} rows in {len(counts)} engines at one snapshot")
    if len(set(counts.values())) != 1:
        fail(stack, "compute", "the engines disagree on the streaming table at one pinned snapshot",
             {"snapshot": snapshot_id, "counts": counts})
    if job.source == "generator" and distinct != counts["pyiceberg"]:
        fail(stack, "compute", "the generator's order ids appear more than once: a job started over instead of "
             "restoring its state", {"rows": counts["pyiceberg"], "distinct order ids": distinct})
    say(f"== PASS: one snapshot per completed checkpoint over {len(window)} checkpoints, "
        f"{counts['pyiceberg']:,} rows alike in {', '.join(counts)}")
