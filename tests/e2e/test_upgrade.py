"""The upgrade from an earlier release, in place, with data in flight, for real on native.

As a user with one checkout upgrades: a clone of this repository at the earlier release (the previous one of
``[tool.lakehouse.releases]``; ``LAKEHOUSE_UPGRADE_FROM=<version>`` for another supported one) makes its own venv
and deploys an isolated native stack (``upgrade-<first port>``, on the ``upgrade`` block, its data in this checkout's
state root), which is put to work: the declared tables get rows, a table of the test gets a commit per second, the
bookshop's PostgreSQL gets an order every half second (CDC: Debezium -> Kafka -> the Iceberg sink), the Flink job
commits once per checkpoint, a catalog backup is taken. Then, in that same clone, while the writers go on:

1. ``git checkout`` of this commit: the release's files replaced in place, not beside (what git does not track stays:
   the venv, the stack file, the backend, the data); ``make venv``; the preview's plan is recorded;
2. an upgrade that fails half way, on purpose: ``make up`` with Trino unable to start (a JVM option it refuses);
3. the documented way forward: the cause removed, ``make up`` again, which finishes the upgrade.

Then: nothing was replaced (the plan), every table and snapshot from before is there and every commit the writer saw
acknowledged is in its table's log; every order PostgreSQL acknowledged is in the sink's table exactly once; the Flink
job resumed from its savepoint with no order id twice; Kafka kept its topics and committed offsets; the backup taken
before the upgrade restores (with roll-forward) on this release; this release destroys what the earlier one made.
Each service's downtime is printed (``tests.support.downtime``), with the plan and the counts.

Heavy (a clone with two venvs, a deploy, two upgrades, a restore): ``make test`` runs it (marker e2e).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from lakehouse_platform import version
from lakehouse_platform.control import clients, isolated
from lakehouse_platform.paths import stack_state_dir, state_root
from tests.support import REPO_ROOT, downtime
from tests.support.checkouts import (
    Checkout,
    CheckoutCommandFailed,
    deploy_previous_release,
    head_commit,
    live,
    previous_release_ref,
    upgrade_from,
)
from tests.support.polling import wait_for
from tests.support.stack_data import cdc_pipeline, flink_ids, kafka_state, offsets_gone_back, table_snapshots

FIRST_PORT = isolated.first_port_of("upgrade")
# Not an isolated stack's name here: the stack lives on the clone's own backend.
STACK = f"upgrade-{FIRST_PORT}"
FROM = upgrade_from()
#: This commit, read as the test starts: what the clone is moved to (later commits of this repository are not it).
THIS = head_commit()
#: The fault of the half-done upgrade: a JVM refuses an option it does not know, so Trino cannot start.
FAULT = {"trino": {"env": {"JAVA_TOOL_OPTIONS": "-XX:+LakehouseUpgradeFault"}}}

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
    pytest.mark.skipif(FROM is None, reason="this is the first release: nothing to upgrade from"),
]

SCHEMA = pa.schema([pa.field("n", pa.int64(), nullable=False), pa.field("phase", pa.string())])


# -- the writers that keep going through the upgrade ------------------------------------------------------------


@dataclass
class IcebergWriter:
    """One commit per ``every_s`` to a table of the test; the snapshot ids the catalog acknowledged."""

    outputs: dict[str, Any]
    table: str
    every_s: float = 1.0
    phase: str = "before"
    acknowledged: list[int] = field(default_factory=list)
    failures: int = 0
    n: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        catalog = None
        while not self._stop.is_set():
            try:
                catalog = catalog or clients.pyiceberg_catalog(self.outputs, name="upgrade-writer")
                table = catalog.load_table(self.table)
                table.append(pa.table({"n": [self.n], "phase": [self.phase]}, schema=SCHEMA))
                self.acknowledged.append(table.current_snapshot().snapshot_id)
                self.n += 1
            except Exception:  # noqa: BLE001 - the catalog or the store is down for a moment: try again
                self.failures += 1
                catalog = None
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()


@dataclass
class OrdersWriter:
    """One new order per ``every_s`` into the bookshop's PostgreSQL; the order ids whose commit was acknowledged."""

    outputs: dict[str, Any]
    database: str
    first_id: int
    every_s: float = 0.5
    acknowledged: list[int] = field(default_factory=list)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        import psycopg

        host, port = self.outputs["endpoints"]["postgres"]["pg"]["external"].rsplit(":", 1)
        password = self.outputs["credentials"]["postgres_password"]
        next_id, conn = self.first_id, None
        while not self._stop.is_set():
            try:
                conn = conn or psycopg.connect(host=host, port=int(port), user="postgres", dbname=self.database,
                                               password=password, autocommit=True, connect_timeout=3)
                conn.execute("INSERT INTO public.orders (order_id, customer_id, book_isbn, quantity, unit_price, "
                             "status, order_ts) VALUES (%s, 7, '9781234567897', 1, 10.00, 'placed', "
                             "now() AT TIME ZONE 'utc') ON CONFLICT (order_id) DO NOTHING", (next_id,))
                self.acknowledged.append(next_id)
                next_id += 1
            except Exception:  # noqa: BLE001 - PostgreSQL restarting: reconnect and insert the same id again
                self.failures += 1
                with contextlib.suppress(Exception):
                    conn.close()  # type: ignore[union-attr]
                conn = None
            self._stop.wait(self.every_s)
        with contextlib.suppress(Exception):
            conn.close()  # type: ignore[union-attr]

    def stop(self) -> None:
        self._stop.set()


@contextlib.contextmanager
def running(*writers: IcebergWriter | OrdersWriter) -> Iterator[None]:
    threads = [threading.Thread(target=w.run, daemon=True) for w in writers]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        for writer in writers:
            writer.stop()
        for thread in threads:
            thread.join(timeout=30)


# -- what is read before and after ---------------------------------------------------------------------------


def cdc_counts(out: dict[str, Any], sink_table: str) -> dict[int, int]:
    """order_id -> rows of inserts (Debezium 'c' and snapshot 'r' events) in the sink's table."""
    import duckdb

    arrow = clients.pyiceberg_catalog(out, name="upgrade-cdc").load_table(sink_table).scan().to_arrow()
    con = duckdb.connect()
    con.register("cdc", arrow)
    rows = con.execute("SELECT order_id, count(*) FROM cdc WHERE _cdc.op NOT IN ('U', 'D') GROUP BY order_id")
    return {int(order_id): int(count) for order_id, count in rows.fetchall()}



# -- the upgrade ------------------------------------------------------------------------------------------------


def with_services(stack_file: str, services: dict[str, Any]) -> str:
    """A stack file's text with ``services`` merged into its platform's (the earlier release wrote the file)."""
    document = yaml.safe_load(stack_file)
    platform = document["config"]["lakehouse:platform"]
    for name, settings in services.items():
        platform.setdefault("services", {}).setdefault(name, {}).update(settings)
    return yaml.safe_dump(document, sort_keys=False)


def with_the_upgrade_notes_changes(stack_file: str) -> str:
    """The config change the release notes ask of an upgrade to 0.5.0 (CHANGELOG, Upgrading to 0.5.0): expiry runs
    often enough for the streams' tables (0.5.0 refuses a retention their write rate would pass between two runs,
    naming the key), its threshold each table's retention."""
    document = yaml.safe_load(stack_file)
    for job in document["config"]["lakehouse:platform"].get("maintenance", []):
        if job["action"] == "expire_snapshots":
            job["schedule"] = "*/15 * * * *"
            job.pop("older_than_days", None)
    return yaml.safe_dump(document, sort_keys=False)


def stack_pids(release: Checkout) -> list[int]:
    """Every process the stack's state records (each service under its watchdog)."""
    resources = json.loads(release.exported_state(STACK))["resources"]
    return [int(r["outputs"]["pid"]) for r in resources
            if r["type"].endswith("native:LocalService") and (r.get("outputs") or {}).get("pid")]


@dataclass
class Upgrade:
    release: Checkout
    before: dict[str, Any]
    after: dict[str, Any]
    tables_before: dict[str, list[int]]
    writer: IcebergWriter
    orders: OrdersWriter
    kafka_before: dict[str, Any]
    backup_file: str
    poller: downtime.DowntimePoller
    plan: dict[str, list[str]]
    failure: str
    seconds: dict[str, float] = field(default_factory=dict)
    destroyed: bool = False


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upgrade]:
    assert FROM is not None
    # One checkout, as a user has: the earlier release, its data in this checkout's state root.
    release = Checkout.clone(previous_release_ref(), tmp_path_factory.mktemp("upgrade") / "checkout",
                             env={"LAKEHOUSE_STATE_DIR": str(state_root())})
    # A release that kept data in its checkout (0.3.0) has it moved here by the upgrade, which refuses to move it onto
    # data: a previous run's (a destroy keeps data) goes first.
    shutil.rmtree(stack_state_dir(STACK), ignore_errors=True)
    upgrade: Upgrade | None = None
    try:
        began = time.perf_counter()
        deploy_previous_release(release, STACK, FIRST_PORT, {})
        deployed_s = time.perf_counter() - began
        before = release.outputs(STACK)
        print(f"\n== release {FROM[0]} ({FROM[1][:7]}) deployed stack {STACK} in {deployed_s:.1f} s "
              f"({', '.join(f'{k} {v:.0f} s' for k, v in release.timings.items())})")

        # To work: declared tables with rows, a table of our own, orders into the CDC source, a backup.
        catalog = clients.pyiceberg_catalog(before, name="upgrade-setup")
        namespace = f"upgrade_{uuid.uuid4().hex[:6]}"
        catalog.create_namespace(namespace)
        catalog.create_table(f"{namespace}.commits", schema=SCHEMA)
        table = catalog.load_table("shop.customers")
        table.append(pa.Table.from_pylist([{"customer_id": i, "name": f"c{i}", "country": "NL"} for i in range(50)],
                                          schema=table.schema().as_arrow()))
        database, sink_table = cdc_pipeline(before)
        writer = IcebergWriter(before, f"{namespace}.commits")
        orders = OrdersWriter(before, database, first_id=9_000_000)
        with running(writer, orders):
            wait_for("the writers' first commits", lambda: len(writer.acknowledged) >= 5 and len(orders.acknowledged)
                     >= 10, 120)
            wait_for("CDC carrying the new orders into Iceberg", lambda: set(orders.acknowledged[:10])
                     <= set(cdc_counts(before, sink_table)), 180, 5)
            wait_for("the Flink job committing", lambda: flink_ids(before)[0] > 0, 180, 5)
            release.control("recovery", "backup", "--stack", STACK)
            listed = json.loads(release.control("recovery", "list", "--stack", STACK))
            # The catalog's own database file (restore takes <database>-<time>.db), the newest verified one.
            backup_file = max((b for b in listed["backups"] if b.get("verified") and b["file"].endswith(".db")),
                              key=lambda b: b["taken_at"])["file"]
            tables_before = table_snapshots(before)
            kafka_before = kafka_state(before)

            # The upgrade, in the same checkout: this commit's files in place of the release's, its venv, its plan.
            release.timings.clear()
            release.checkout(THIS)
            release.make("venv")
            stack_file = release.root / f"Pulumi.{STACK}.yaml"
            stack_file.write_text(with_the_upgrade_notes_changes(stack_file.read_text()))
            plan = release.preview_plan(STACK)
            poller = downtime.DowntimePoller({
                **downtime.service_checks(json.loads(release.exported_state(STACK))["resources"]),
                "flink-orders-job": downtime.flink_job_check(before["profiles"]["host"]["flink"]["rest"],
                                                             before["profiles"]["host"]["flink"]["job"]["name"]),
                "connectors": downtime.connectors_check(
                    before["profiles"]["host"]["kafka_connect"]["url"],
                    [c["name"] for c in before["streams"]["connectors"]]),
            }).start()
            writer.phase = "during"
            pristine = stack_file.read_text()
            try:
                # Half way, on purpose: a service of the new release cannot start.
                stack_file.write_text(with_services(pristine, FAULT))
                started = time.perf_counter()
                with pytest.raises(CheckoutCommandFailed) as failed:
                    release.make("up", STACK=STACK)
                failed_s = time.perf_counter() - started
                # The way forward the docs give: the cause removed, `make up` again.
                stack_file.write_text(pristine)
                started = time.perf_counter()
                release.make("up", STACK=STACK)
                recovered_s = time.perf_counter() - started
                after = release.outputs(STACK)
                try:
                    wait_for("every service and the job answering again", lambda: all(
                        not o.still_down for o in poller.outages.values()), 240, 2)
                except AssertionError as error:
                    raise AssertionError(f"{error}\n{poller.report('still down after the upgrade')}") from None
            finally:
                poller.stop()
            writer.phase = "after"
            settled = len(writer.acknowledged)
            wait_for("commits after the upgrade", lambda: len(writer.acknowledged) >= settled + 5, 120, 1)
        seconds = {**{k: v for k, v in release.timings.items() if not k.startswith("up ")},
                   "failed make up": failed_s, "recovering make up": recovered_s}
        print(f"\n== upgrade {FROM[0]} -> {version.PLATFORM_VERSION} in one checkout: "
              + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
        print(f"== the preview's plan: {', '.join(f'{op} {len(names)}' for op, names in sorted(plan.items()))}; "
              f"replaced: {sorted(plan.get('replace', [])) or 'none'}")
        print("\n" + poller.report(f"downtime while release {FROM[0]} -> {version.PLATFORM_VERSION}, the failed "
                                   "make up and the recovering one"))
        upgrade = Upgrade(release, before, after, tables_before, writer, orders, kafka_before, backup_file, poller,
                          plan, failed.value.output or str(failed.value), seconds)
        yield upgrade
    finally:
        if upgrade is None or not upgrade.destroyed:
            with contextlib.suppress(Exception):
                release.down(STACK)


def test_the_preview_replaces_nothing_and_the_upgrade_reports_this_release(upgraded: Upgrade) -> None:
    assert not upgraded.plan.get("replace") and not upgraded.plan.get("delete"), upgraded.plan
    assert upgraded.after.get("platform_version") == version.PLATFORM_VERSION
    assert not any(o.still_down for o in upgraded.poller.outages.values()), upgraded.poller.report("still down")


def test_a_half_done_upgrade_fails_naming_the_service_and_the_next_make_up_finishes_it(upgraded: Upgrade) -> None:
    said = [line for line in upgraded.failure.splitlines() if "error" in line.lower() or "service '" in line]
    print("\n== the half-done upgrade failed with:\n" + "\n".join(said[-20:]))
    # The error names the service the fault was put on and why it stopped (its log's tail follows it).
    assert "service 'trino'" in upgraded.failure and "before becoming healthy" in upgraded.failure
    assert upgraded.after["target"] == "native" and upgraded.after["stack"] == STACK


def test_every_table_snapshot_and_acknowledged_commit_is_kept(upgraded: Upgrade) -> None:
    after = table_snapshots(upgraded.after)
    lost_tables = sorted(set(upgraded.tables_before) - set(after))
    lost_snapshots = {t: sorted(set(s) - set(after.get(t, []))) for t, s in upgraded.tables_before.items()}
    lost_snapshots = {t: s for t, s in lost_snapshots.items() if s}
    commits = after[upgraded.writer.table]
    missing = sorted(set(upgraded.writer.acknowledged) - set(commits))
    print(f"\n== tables: {len(upgraded.tables_before)} before, {len(after)} after; commits acknowledged "
          f"{len(upgraded.writer.acknowledged)} (failed attempts {upgraded.writer.failures}), in the log "
          f"{len(commits)}, missing {len(missing)}")
    assert not lost_tables and not lost_snapshots and not missing, (lost_tables, lost_snapshots, missing)


def test_cdc_resumes_with_no_change_lost_or_doubled(upgraded: Upgrade) -> None:
    _, sink_table = cdc_pipeline(upgraded.after)
    wanted = set(upgraded.orders.acknowledged)

    def arrived() -> dict[int, int] | None:
        counts = cdc_counts(upgraded.after, sink_table)
        return counts if wanted <= set(counts) else None

    counts = wait_for("every acknowledged order in the sink's table", arrived, 240, 5)
    doubled = {k: v for k, v in counts.items() if v != 1}
    print(f"\n== CDC: {len(wanted)} orders acknowledged by PostgreSQL (failed attempts {upgraded.orders.failures}), "
          f"{len(wanted & set(counts))} in Iceberg, {len(doubled)} order ids with more than one insert event")
    assert not doubled, dict(list(doubled.items())[:20])


def test_flink_job_resumed_from_its_savepoint_and_wrote_no_row_twice(upgraded: Upgrade) -> None:
    job = upgraded.after["jobs"]["flink-orders-job"]
    before = upgraded.before["jobs"]["flink-orders-job"]
    rows, distinct = flink_ids(upgraded.after)
    print(f"\n== Flink: job {before['job_id']} -> {job['job_id']}, restored from {job['restored_from'] or '(nothing)'}; "
          f"{rows} rows, {distinct} distinct order ids")
    assert job["state"] == "RUNNING"
    if job["job_id"] != before["job_id"]:
        assert "/savepoints/" in job["restored_from"], job
    assert rows == distinct > 0


def test_kafka_keeps_its_topics_and_offsets(upgraded: Upgrade) -> None:
    after = kafka_state(upgraded.after)
    before = upgraded.kafka_before
    went_back = offsets_gone_back(before, after)
    print(f"\n== Kafka: topics {before['topics']} -> {after['topics']}; {len(before['offsets'])} consumer groups, "
          f"{sum(len(p) for p in before['offsets'].values())} committed offsets, none went back: {not went_back}")
    assert set(before["topics"]) <= set(after["topics"])
    assert not went_back, went_back


def test_a_backup_taken_before_the_upgrade_still_restores(upgraded: Upgrade) -> None:
    """Near the end (file order): the restore stops and starts the catalog. Run as its user runs it, in the clone."""
    out = upgraded.release.control("recovery", "restore", "--backup", upgraded.backup_file, "--stack", STACK)
    report = json.loads(out)  # stdout is the report alone (the deploy's progress is on stderr)
    unreadable = {t: r for t, r in report["tables"].items() if "error" in r}
    print(f"\n== restore of the pre-upgrade backup {Path(upgraded.backup_file).name}: {len(report['tables'])} "
          f"tables read back, rolled forward {report['rolled_forward']}, {report['seconds']['total_s']} s")
    assert not unreadable, unreadable
    commits = [s.snapshot_id for s in clients.pyiceberg_catalog(upgraded.after, name="upgrade-restored")
               .load_table(upgraded.writer.table).snapshots()]
    assert set(upgraded.writer.acknowledged) <= set(commits)


def test_this_release_destroys_what_the_earlier_release_made(upgraded: Upgrade) -> None:
    """Last (file order): ``make down`` in the upgraded checkout leaves nothing of the stack running."""
    pids = stack_pids(upgraded.release)
    assert pids and live(pids), "the upgraded stack's services run before the destroy"
    upgraded.release.make("down", STACK=STACK)
    upgraded.destroyed = True
    assert live(pids) == [], "nothing of the stack runs after the destroy"
