"""Recovery (recovery layer): backups on schedule, and the drill — lose the catalog's database, get it back.

1. Backups: the backup service runs on ``recovery.backup_schedule``; it has backed up the catalog
   (its run is in the run record), every backup's sha256 sidecar matches, each PostgreSQL dump is
   a valid archive (``pg_restore --list``), and the newest scheduled backup is younger than the
   recovery point objective.
2. Drill (a), the chapter's exercise 2: the catalog's database is lost entirely (catalog stopped,
   file deleted, catalog started on an empty database: every table is gone from it; natively by its pid
   and ``pulumi up``, in the lab ``docker stop``/``docker start``, the file in the bind-mounted state). Restore from
   the latest backup (``lakehouse recovery restore``): the backup's pointers, rolled
   forward from storage. Every table the catalog had reads back with its row count and snapshot;
   the recovery time is measured against ``recovery.rto_minutes``, the recovery point (the commits
   the backup alone misses, and what is left missing after rolling forward) against ``rpo_minutes``.
3. Drill (b), chapter 16's procedure: lose it again, no backup this time: rebuild the catalog by
   registering each table's newest metadata.json found on storage (``recovery rebuild``). Every
   table reads back, timed against the same objective.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import time

import pyarrow as pa
import pytest

from lakehouse_platform.probes.support import control, services
from lakehouse_platform.probes.support import operations as ops
from lakehouse_platform.probes.support.stack import Stack, fail
from lakehouse_platform.services.capabilities import BACKUPS, STREAMING_WRITER
from lakehouse_platform.services.registry import registry

pytestmark = [pytest.mark.recovery]

STATE: dict = {}  # what drill (a) leaves for drill (b): the truth before the first loss


def _needs_backups(stack: Stack, drill: bool = False) -> dict:
    """The operations output with its backups; a drill also needs to stop and start the catalog here."""
    operations = ops.operations(stack)
    if not operations.get("backups"):
        pytest.skip("this stack takes no catalog backups here (aws: AWS Backup; or catalog-backup disabled)")
    if drill:
        # Skips, saying why, where the catalog cannot be stopped and started here (natively: needs --stack, for
        # `pulumi up`; the lab starts its container with Docker, from an outputs file as well).
        control.control(stack, starts_again=True)
    return operations


@pytest.mark.safe  # reads the role's attributes
def test_backups_dump_as_a_least_role_not_the_superuser(stack: Stack, say):
    """The backup service's PostgreSQL role may read the catalog databases and nothing more: not a superuser, no
    role or database creation, no replication, not pg_read_all_data (which would read the bookshop's source too)."""
    import psycopg

    from lakehouse_platform.runtime.config import Credentials

    pg = (_needs_backups(stack)["backups"] or {}).get("postgres")  # not the service: the backups config's key
    if not pg:
        pytest.skip("this stack dumps no PostgreSQL database (no catalog database on it)")
    role = pg.get("dump_user")
    if not role or role == pg["user"]:
        fail(stack, "recovery", "the backups dump the catalog databases as the superuser", pg)
    password = Credentials.from_outputs(stack.outputs).postgres_password
    with psycopg.connect(host=pg["host"], port=int(pg["port"]), user=pg["user"], password=password,
                         dbname="postgres", connect_timeout=10) as conn:  # not the service: the database
        row = conn.execute("SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, "
                           "pg_has_role(oid, 'pg_read_all_data', 'MEMBER') FROM pg_roles WHERE rolname = %s",
                           (role,)).fetchone()
        allowed = [db for (db,) in conn.execute(
            "SELECT datname FROM pg_database WHERE has_database_privilege(%s, datname, 'CONNECT') "
            "AND NOT datistemplate AND datname <> 'postgres'", (role,)).fetchall()]
    say(f"== backups dump as {role}: attributes {row}, may connect to {sorted(allowed)}")
    if row is None or any(row):
        fail(stack, "recovery", f"the backups' role {role} is missing or holds more than it needs",
             {"rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, pg_read_all_data": row})


@pytest.mark.safe  # lists the backups and verifies their checksums and archives
def test_backups_run_on_schedule_checksummed_within_the_recovery_point(stack: Stack, figure, say):
    from croniter import croniter  # an independent cron implementation, not the scheduler's APScheduler

    operations = _needs_backups(stack)
    plan = operations["backups"]
    rpo_s = operations["recovery"]["rpo_minutes"] * 60
    jobs = ops.scheduler_jobs(stack, services.provider(stack, BACKUPS) or BACKUPS.name)
    deadline = time.monotonic() + 120  # the backup at start waits for the catalogs' databases
    scheduled = []
    while time.monotonic() < deadline:
        scheduled = [r for r in ops.runs(stack, job="backup-catalog") if r.trigger == "schedule" and r.status == "ok"]
        if any(r.target == operations["catalog"]["service"] for r in scheduled):
            break
        time.sleep(2)
    listed = ops.cli(stack, "recovery", "list")
    backups = (listed.output or {}).get("backups", [])
    bad = [b for b in backups if not b["verified"]]
    archives = []
    bindir = (plan.get("postgres") or {}).get("bindir")  # not the service: the backups' pg_dump source
    for dump in [b for b in backups if b["kind"] == "pg_dump"][:4]:
        tool = f"{bindir}/pg_restore" if bindir else "pg_restore"
        done = subprocess.run([tool, "--list", dump["file"]], capture_output=True, text=True, timeout=60, check=False)
        archives.append({"file": dump["file"], "exit": done.returncode, "stderr": done.stderr[-300:]})
    newest = max((r.started_at for r in scheduled if r.target == operations["catalog"]["service"]), default=None)
    age = time.time() - newest if newest else None
    now = dt.datetime.now(dt.UTC)
    expected_next = croniter(plan["schedule"], now).get_next(dt.datetime)
    say(f"== backups every {plan['schedule']!r} (UTC), kept {plan['retention_days']} days, in {plan['dir']}: "
        f"{len(backups)} on disk, {len(bad)} failing their sha256; next {jobs.get('backup-catalog', {}).get('next_run_time')}")
    say(f"== newest scheduled backup of {operations['catalog']['service']}: "
        f"{'none' if age is None else f'{age:.0f} s old'} (recovery point objective {rpo_s // 60} min)")
    figure(f"{len(backups)} backups verified {len(backups) - len(bad)}/{len(backups)}, newest scheduled "
           f"{'-' if age is None else f'{age:.0f} s'} old, RPO {rpo_s // 60} min")
    if "backup-catalog" not in jobs:
        fail(stack, "recovery", "the backup service has no backup job", jobs)
    next_run = dt.datetime.fromisoformat(jobs["backup-catalog"]["next_run_time"])
    if abs((next_run - expected_next).total_seconds()) > 1 and next_run > expected_next:
        fail(stack, "recovery", "the backup job does not follow recovery.backup_schedule",
             {"scheduler": jobs["backup-catalog"], "cron gives": expected_next.isoformat()})
    if age is None:
        fail(stack, "recovery", "no scheduled backup of the catalog has succeeded",
             [r.__dict__ for r in ops.runs(stack, job="backup-catalog")][:5])
    if bad or listed.returncode != 0:
        fail(stack, "recovery", "backups fail their checksum", bad or listed.evidence())
    if any(a["exit"] != 0 for a in archives):
        fail(stack, "recovery", "a PostgreSQL dump is not a valid archive", archives)
    if age > rpo_s:
        fail(stack, "recovery", f"the newest scheduled backup is {age:.0f} s old, older than the recovery point "
             f"objective ({rpo_s // 60} min)", {"age_s": age})


def _append(table, rows: int, start: int) -> None:
    table.append(pa.Table.from_pylist([{"id": start + i} for i in range(rows)], schema=table.schema().as_arrow()))


def streaming_tables(stack: Stack) -> set[str]:
    """Tables the platform's own streaming writers (the Flink job, Connect's sinks) commit to all along."""
    writer = services.provider(stack, STREAMING_WRITER)
    profile = registry()[writer].profile if writer else None
    found = {(stack.host_profiles.get(profile.key) or {}).get("job", {}).get("table") if profile else None}
    found |= {c.get("table") for c in (stack.outputs.get("streams") or {}).get("connectors", [])}
    return {t for t in found if t}


def _compare(truth: dict, tables: dict, streaming: set[str] = frozenset()) -> list[dict]:  # type: ignore[assignment]
    """Tables of the truth that do not read back with the same rows and current snapshot.

    A table a streaming writer keeps committing to may be further on after the recovery: it is right
    when the snapshot of the loss is in its history and no row is missing (nothing lost, the writer
    went on).
    """
    wrong = []
    for ident, want in truth.items():
        got = tables.get(ident) or {"error": "not in the catalog after recovery"}
        if ident in streaming and "error" not in got and want["snapshot_id"] in (got.get("snapshots") or []) \
                and got.get("rows", -1) >= want["rows"]:
            continue
        if "error" in got or got.get("rows") != want["rows"] or got.get("snapshot_id") != want["snapshot_id"]:
            wrong.append({"table": ident, "expected_rows": want["rows"], "expected_snapshot": want["snapshot_id"],
                          "got": got})
    return wrong


@pytest.mark.disruptive("loses the catalog's database (stopped, its file deleted) and restores it from a backup")
def test_drill_restore_from_the_latest_backup(stack: Stack, created_tables, figure, say):
    operations = _needs_backups(stack, drill=True)
    from pyiceberg.schema import Schema
    from pyiceberg.table import StaticTable
    from pyiceberg.types import LongType, NestedField

    objectives = operations["recovery"]
    catalog = stack.catalog()
    namespace = f"probe_{stack.run_id}"
    catalog.create_namespace_if_not_exists(namespace)
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    kept = catalog.create_table(f"{namespace}.drill", schema=schema)
    created_tables.append(f"{namespace}.drill")
    for i in range(2):
        _append(kept, 10, i * 10)
    backup = ops.cli(stack, "recovery", "backup")  # the latest backup: it knows drill with 2 commits
    if backup.returncode != 0:
        fail(stack, "recovery", "an on-demand backup failed", backup.evidence())
    backed_up_at = time.time()
    kept = catalog.load_table(f"{namespace}.drill")
    for i in range(3):  # commits the backup does not have
        _append(kept, 10, 100 + i * 10)
    late = catalog.create_table(f"{namespace}.drill_late", schema=schema)  # a table the backup does not know
    created_tables.append(f"{namespace}.drill_late")
    _append(late, 7, 0)
    truth = ops.catalog_truth(catalog)
    STATE["truth"] = truth

    loss = ops.lose_catalog_database(stack)
    lost_view = stack.catalog().list_namespaces()
    say(f"== loss: catalog stopped, {loss['removed']} deleted, started again on an empty database in "
        f"{loss['seconds']} s; namespaces now {lost_view}")
    if lost_view:
        fail(stack, "recovery", "the drill did not lose the catalog's database", {"namespaces": lost_view, **loss})

    restore = ops.cli(stack, "recovery", "restore", with_stack=bool(stack.name))
    stack.reload()
    report = restore.output if isinstance(restore.output, dict) else {}
    if restore.returncode != 0 or not report:
        fail(stack, "recovery", "the scripted restore failed", restore.evidence())
    wrong = _compare(truth, report.get("tables", {}), streaming_tables(stack))
    # The recovery point of the backup alone: the commits its pointers do not have.
    io_props = stack.pyiceberg_props()
    lost_by_backup = 0
    for ident, want in truth.items():
        pointer = report["restored_pointers"].get(ident)
        had = set()
        if pointer:
            had = {s.snapshot_id for s in StaticTable.from_metadata(pointer, properties=io_props).metadata.snapshots}
        lost_by_backup += len(set(want["snapshots"]) - had) if want["snapshots"] else 0
    rto_s = restore.seconds
    point_s = loss["lost_at"] - backed_up_at
    say(f"== (a) restore: backup {report['backup']['file']} ({report['backup_age_s']:.0f} s old at restore), "
        f"steps {report['seconds']}; rolled forward {report['rolled_forward']}")
    say(f"== (a) recovery time {rto_s:.1f} s (objective {objectives['rto_minutes']} min); the backup alone: "
        f"recovery point {point_s:.1f} s, {lost_by_backup} commits missing; after rolling forward: "
        f"{len(wrong)} tables differ, 0 commits lost expected")
    STATE["figures_a"] = {"rto_s": round(rto_s, 1), "backup_point_s": round(point_s, 1),
                          "commits_missing_in_backup": lost_by_backup}
    figure(f"RTO {rto_s:.1f} s (<= {objectives['rto_minutes']} min); backup alone: RPO {point_s:.1f} s, "
           f"{lost_by_backup} commits; rolled forward: {len(truth) - len(wrong)}/{len(truth)} tables exact")
    if wrong:
        fail(stack, "recovery", "after restore and roll-forward, tables do not read back as before the loss", wrong)
    if lost_by_backup < 4:
        fail(stack, "recovery", "the drill's backup already had the commits made after it: the drill proves nothing",
             {"commits_missing_in_backup": lost_by_backup})
    if rto_s > objectives["rto_minutes"] * 60:
        fail(stack, "recovery", f"the restore took {rto_s:.0f} s, over the recovery time objective "
             f"({objectives['rto_minutes']} min)", report["seconds"])
    if point_s > objectives["rpo_minutes"] * 60:
        fail(stack, "recovery", "the backup restored is older than the recovery point objective", {"age_s": point_s})


@pytest.mark.disruptive("loses the catalog's database again and rebuilds it from storage")
def test_drill_rebuild_from_storage_without_a_backup(stack: Stack, figure, say):
    operations = _needs_backups(stack, drill=True)
    objectives = operations["recovery"]
    truth = STATE.get("truth") or ops.catalog_truth(stack.catalog())
    loss = ops.lose_catalog_database(stack)
    if stack.catalog().list_namespaces():
        fail(stack, "recovery", "the drill did not lose the catalog's database", loss)
    rebuild = ops.cli(stack, "recovery", "rebuild")
    report = rebuild.output if isinstance(rebuild.output, dict) else {}
    if rebuild.returncode != 0 or not report:
        fail(stack, "recovery", "rebuilding the catalog from storage failed", rebuild.evidence())
    wrong = _compare(truth, report.get("tables", {}), streaming_tables(stack))
    extra = sorted(set(report.get("tables", {})) - set(truth))
    rto_s = loss["up_s"] + rebuild.seconds  # the catalog restarted empty, then every table registered
    say(f"== (b) rebuild: {report['found_on_storage']} tables found on storage, registered in "
        f"{report['seconds']}; extra tables resurrected from storage: {extra or 'none'}")
    say(f"== (b) recovery time {rto_s:.1f} s (catalog restart {loss['up_s']} s + rebuild {rebuild.seconds:.1f} s; "
        f"objective {objectives['rto_minutes']} min); {len(truth) - len(wrong)}/{len(truth)} tables exact")
    figure(f"RTO {rto_s:.1f} s (<= {objectives['rto_minutes']} min); {len(truth) - len(wrong)}/{len(truth)} tables "
           "exact, 0 commits lost")
    if wrong:
        fail(stack, "recovery", "after the rebuild from storage, tables do not read back as before the loss", wrong)
    if rto_s > objectives["rto_minutes"] * 60:
        fail(stack, "recovery", f"the rebuild took {rto_s:.0f} s, over the recovery time objective", report["seconds"])
