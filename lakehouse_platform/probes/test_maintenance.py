"""Tables as code and maintenance that runs (orchestration).

1. Every table the stack declares exists in the default catalog with its declared columns, types,
   partition fields, owner, freshness promise and maintenance (as table properties).
2. The maintenance scheduler runs every job of the spec on its cron: its jobs and their next run
   times are exactly what the spec's cron expressions give (computed here independently).
3. Maintenance runs and is safe. On a table with history: expire_snapshots and remove_orphan_files
   are triggered on demand (``lakehouse maintenance run``) with a short threshold;
   snapshots older than the threshold are gone, every file any remaining snapshot references
   exists, an orphan older than the threshold is removed, and a file written moments ago by a
   writer that has not committed yet is not deleted. Both runs are in the run record.
"""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from lakehouse_platform.probes.support import operations as ops
from lakehouse_platform.probes.support import services
from lakehouse_platform.probes.support.stack import Stack, fail
from lakehouse_platform.services.capabilities import MAINTENANCE, SQL_ENGINE

pytestmark = [pytest.mark.orchestration]

THRESHOLD_S = 30  # the probe's safety margin (the spec's is days): long enough for the CLI to start under load
HISTORY = 4


@pytest.mark.safe  # reads the declared tables
def test_declared_tables_exist_with_their_schema_owner_and_promises(stack: Stack, figure, say):
    declared = ops.operations(stack).get("tables") or []
    if not declared:
        pytest.skip("the stack declares no tables (spec.tables)")
    from lakehouse_platform.runtime import tables as tables_logic

    catalog = stack.catalog()
    problems = []
    for decl in declared:
        ident = f"{decl['namespace']}.{decl['name']}"
        try:
            table = catalog.load_table(ident)
        except Exception as exc:  # noqa: BLE001 - reported below
            problems.append({"table": ident, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        columns = {f.name: f for f in table.schema().fields}
        for column in decl["columns"]:
            found = columns.get(column["name"])
            if found is None or found.field_type != tables_logic.iceberg_type(column["type"]):
                problems.append({"table": ident, "column": column["name"], "declared": column["type"],
                                 "found": str(found.field_type) if found else None})
        fields = {(table.schema().find_field(f.source_id).name, str(f.transform)) for f in table.spec().fields}
        for part in decl.get("partition_by") or []:
            if (part["source"], tables_logic.transform_text(part)) not in fields:
                problems.append({"table": ident, "partition": part, "found": sorted(fields)})
        want = tables_logic.table_properties(decl)
        for key in (tables_logic.OWNER_PROPERTY, tables_logic.FRESHNESS_PROPERTY, tables_logic.MAINTENANCE_PROPERTY):
            if table.properties.get(key) != want[key]:
                problems.append({"table": ident, "property": key, "declared": want[key],
                                 "found": table.properties.get(key)})
        say(f"== {ident}: owner {table.properties.get('owner')!r}, fresh within "
            f"{table.properties.get(tables_logic.FRESHNESS_PROPERTY)} min, maintenance "
            f"{table.properties.get(tables_logic.MAINTENANCE_PROPERTY)}, spec {[f.name for f in table.spec().fields]}")
    figure(f"{len(declared)} declared tables, {len(problems)} differences")
    if problems:
        fail(stack, "orchestration", "declared tables differ from their declaration in the catalog", problems)


@pytest.mark.safe  # reads the scheduler's jobs
def test_the_scheduler_runs_every_maintenance_job_on_its_cron(stack: Stack, figure, say):
    from croniter import croniter  # an independent cron implementation, not the scheduler's APScheduler

    jobs = ops.operations(stack).get("maintenance") or []
    if not jobs:
        pytest.skip("the stack schedules no maintenance")
    try:
        running = ops.scheduler_jobs(stack, services.provider(stack, MAINTENANCE) or MAINTENANCE.name)
    except Exception as exc:  # noqa: BLE001
        fail(stack, "orchestration", "the maintenance scheduler does not answer", str(exc))
    now = dt.datetime.now(dt.UTC)
    problems = []
    for job in jobs:
        expected = croniter(job["schedule"], now).get_next(dt.datetime)
        found = running.get(job["id"])
        if found is None:
            problems.append({"job": job["id"], "problem": "not scheduled"})
            continue
        next_run = dt.datetime.fromisoformat(found["next_run_time"])
        # The scheduler computed its next run before `now`; one cron period later is the only other answer.
        later = croniter(job["schedule"], expected).get_next(dt.datetime)
        if next_run not in (expected, later):
            problems.append({"job": job["id"], "cron": job["schedule"], "scheduler says": found["next_run_time"],
                             "cron gives": expected.isoformat()})
        say(f"== {job['id']}: cron {job['schedule']!r} (UTC), next run {found['next_run_time']}")
    figure(f"{len(jobs)} jobs scheduled, next: {min(j['next_run_time'] for j in running.values())}")
    if problems:
        fail(stack, "orchestration", "the scheduler's jobs are not the spec's maintenance", problems)


def _append(table, start: int, rows: int) -> None:
    table.append(pa.Table.from_pylist(
        [{"id": start + i, "note": f"row {start + i}"} for i in range(rows)], schema=table.schema().as_arrow()))


@pytest.mark.disruptive("runs expire_snapshots and remove_orphan_files on demand, recorded in the platform's run "
                        "record")
def test_maintenance_runs_and_is_safe(stack: Stack, created_tables, figure, say):
    if not ops.operations(stack):
        pytest.skip("the stack exports no operations (no maintenance scheduler on this target)")
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = stack.catalog()
    s3 = stack.s3()
    namespace = f"probe_{stack.run_id}"
    ident = f"{namespace}.maintained"
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(ident, schema=Schema(NestedField(1, "id", LongType(), required=False),
                                                      NestedField(2, "note", StringType(), required=False)))
    created_tables.append(ident)
    for i in range(HISTORY):  # a table with history: HISTORY snapshots, one file each
        _append(table, i * 10, 10)
    location = table.location().removeprefix(f"s3://{stack.bucket}/")
    old_orphan = f"{location}/data/probe-orphan-old.parquet"
    s3.put_object(Bucket=stack.bucket, Key=old_orphan, Body=b"left behind by a writer that died long ago")
    history_done = time.time()
    time.sleep(THRESHOLD_S + 8)  # the history and the old orphan are now older than the threshold
    table = catalog.load_table(ident)
    _append(table, 1000, 5)  # a fresh snapshot, younger than the threshold
    table = catalog.load_table(ident)
    before = {s.snapshot_id: s.timestamp_ms for s in table.metadata.snapshots}

    expire = ops.cli(stack, "maintenance", "run", "expire_snapshots", "--table", ident,
                     "--older-than", f"{THRESHOLD_S}s")
    fresh_orphan = f"{location}/data/probe-uncommitted-{stack.run_id}.parquet"
    s3.put_object(Bucket=stack.bucket, Key=fresh_orphan, Body=b"written by a writer that has not committed yet")
    fresh_written = time.time()
    orphans = ops.cli(stack, "maintenance", "run", "remove_orphan_files", "--table", ident,
                      "--older-than", f"{THRESHOLD_S}s")
    for result in (expire, orphans):
        if result.returncode != 0 or not result.output or result.output[0]["status"] != "ok":
            fail(stack, "orchestration", "a maintenance run failed", result.evidence())
    expire_run, orphan_run = expire.output[0], orphans.output[0]

    table = catalog.load_table(ident)
    after = {s.snapshot_id: s.timestamp_ms for s in table.metadata.snapshots}
    cutoff_ms = (expire_run["started_at"] - THRESHOLD_S) * 1000
    old = {sid for sid, ts in before.items() if ts < cutoff_ms and sid != table.current_snapshot().snapshot_id}
    survivors_too_old = sorted(old & set(after))
    referenced = ops.referenced_by_all_snapshots(table)
    missing = ops.missing_files(s3, referenced)
    keys = {o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=stack.bucket, Prefix=location)
            for o in page.get("Contents", [])}
    rows = int(table.scan().count())
    fresh_age = orphan_run["started_at"] - fresh_written
    recorded = {(r.job, r.trigger, r.status) for r in ops.runs(stack, target=ident)}

    say(f"== {ident}: {len(before)} snapshots -> {len(after)} after expire_snapshots (threshold {THRESHOLD_S}s; "
        f"{expire_run['snapshots_removed']} removed, {expire_run['files_removed']} files deleted, "
        f"{expire_run['detail']['seconds']} s)")
    say(f"== remove_orphan_files: {orphan_run['files_removed']} deleted {orphan_run['detail']['removed_files_sample']}; "
        f"uncommitted file {fresh_age:.1f} s old at the run: {'kept' if fresh_orphan in keys else 'DELETED'}")
    say(f"== {len(referenced)} files referenced by the {len(after)} remaining snapshot(s): {len(missing)} missing; "
        f"{rows} rows read back")
    figure(f"snapshots {len(before)}->{len(after)}, orphans removed {orphan_run['files_removed']}, "
           f"referenced files missing {len(missing)}, fresh uncommitted file kept: {fresh_orphan in keys}")
    evidence = {"expire": expire_run, "orphans": orphan_run, "old_snapshots_left": survivors_too_old,
                "missing": missing[:20], "fresh_orphan_age_s": round(fresh_age, 1),
                "history_age_at_run_s": round(expire_run["started_at"] - history_done, 1)}
    if fresh_age >= THRESHOLD_S:
        fail(stack, "orchestration", f"the probe took {fresh_age:.0f} s to run orphan removal after writing its fresh "
             f"file, longer than its {THRESHOLD_S}s threshold: the safety check is inconclusive (machine overloaded?)",
             evidence)
    if survivors_too_old or len(after) != 1:
        fail(stack, "orchestration", "expire_snapshots left snapshots older than its threshold", evidence)
    if missing:
        fail(stack, "orchestration", "maintenance deleted files a remaining snapshot references", evidence)
    if fresh_orphan not in keys:
        fail(stack, "orchestration", "orphan removal deleted a file written moments ago by an uncommitted writer",
             evidence)
    if old_orphan in keys:
        fail(stack, "orchestration", "orphan removal kept an orphan older than its threshold", evidence)
    if rows != HISTORY * 10 + 5:
        fail(stack, "orchestration", f"the table reads {rows} rows after maintenance, expected {HISTORY * 10 + 5}",
             evidence)
    if not {("expire_snapshots", "on-demand", "ok"), ("remove_orphan_files", "on-demand", "ok")} <= recorded:
        fail(stack, "observability", "the maintenance runs are not in the run record", sorted(recorded))


@pytest.mark.safe  # its table is in the run's own namespace, purged at the end
def test_trino_creates_and_evolves_a_declared_table_as_the_cloud_does(stack: Stack, created_tables, figure, say):
    """The aws target declares tables through Trino (tables.trino_statements); the same statements, on this Trino."""
    engine = services.engine_of(stack, SQL_ENGINE)
    if engine is None:
        pytest.skip("this stack runs no SQL engine (Trino)")
    from lakehouse_platform.runtime import tables as tables_logic

    namespace = f"probe_{stack.run_id}"
    declaration = {"namespace": namespace, "name": "declared_by_trino", "owner": "probe team",
                   "freshness_minutes": 30, "maintenance": ["expire_snapshots"], "properties": {},
                   "columns": [{"name": "id", "type": "long", "required": True}, {"name": "n", "type": "int"},
                               {"name": "ts", "type": "timestamptz", "doc": "when"}],
                   "partition_by": [{"source": "ts", "transform": "day"}]}
    cursor = engine.cursor()
    ident = f"{namespace}.declared_by_trino"
    created_tables.append(ident)

    def apply(decl: dict) -> int:
        statements = tables_logic.trino_statements(engine.catalog, decl)
        for sql in statements:
            cursor.execute(sql)
            cursor.fetchall()
        return len(statements)

    count = apply(declaration) + apply(declaration)  # created, then the same again: idempotent
    evolved = {**declaration, "owner": "another team",
               "columns": [*declaration["columns"][:1], {"name": "n", "type": "long"}, declaration["columns"][2],
                           {"name": "channel", "type": "string"}]}
    count += apply(evolved)
    table = stack.catalog().load_table(ident)
    found = {f.name: str(f.field_type) for f in table.schema().fields}
    spec = [(f.name, str(f.transform)) for f in table.spec().fields]
    say(f"== {count} Trino statements: {ident} columns {found}, partitioned {spec}, owner "
        f"{table.properties.get('owner')!r}, fresh within {table.properties.get('platform.freshness-minutes')} min")
    figure(f"{count} statements, {len(found)} columns, owner {table.properties.get('owner')!r}")
    expected = {"id": "long", "n": "long", "ts": "timestamptz", "channel": "string"}
    if found != expected or spec != [("ts_day", "day")] or table.properties.get("owner") != "another team":
        fail(stack, "orchestration", "Trino did not create and evolve the declared table as declared",
             {"columns": found, "expected": expected, "partition": spec, "properties": dict(table.properties)})
