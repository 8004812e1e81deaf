"""The upgrade from the previous release, with data in flight, for real on native.

The previous release (``lakehouse_platform.version.previous_release()``: its tag, or its commit from ``[tool.lakehouse.releases]``)
deploys an isolated native stack (``upgrade-<first port>``, on the ``upgrade`` block) from a clone of its own, with
its own venv and Pulumi CLI (``tests.support.checkouts``), on its own backend. Both programs keep the stack's data
in the same place (``LAKEHOUSE_STATE_DIR``: this checkout's state root, which both releases honour), so this is the
upgrade itself, not the move of the data out of the old checkout (``test_previous_release.py`` proves that). It is
put to work: the declared tables get rows, a table of the test gets a commit per second, the bookshop's
PostgreSQL gets an order every half second (CDC: Debezium -> Kafka -> the Iceberg sink), the Flink job commits
once per checkpoint, a catalog backup is taken. Then this checkout's program runs ``pulumi up`` on the same stack
file, state and data directories while the writers go on, every service's health polled. Then:

- every table and snapshot from before is there, and every commit the writer saw acknowledged (during the upgrade
  too) is in its table's snapshot log;
- every order PostgreSQL acknowledged is in the sink's table exactly once (no change event lost or doubled);
- the Flink job resumed from the savepoint its update took, and its table holds no order id twice;
- Kafka kept its topics and every consumer group's committed offsets;
- the backup taken before the upgrade still restores (restore + roll forward, every table read back);
- each service's downtime is printed (``tests.support.downtime``), with the counts.

Heavy (two platform deploys and a restore): ``make test`` runs it (marker e2e) under the heavy lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from lakehouse_platform import version
from lakehouse_platform.control import clients, commands, isolated
from lakehouse_platform.control.artifacts import fetch
from lakehouse_platform.control.workspace import forget, outputs, select
from lakehouse_platform.paths import stack_state_dir, state_root
from tests.support import REPO_ROOT, downtime
from tests.support.checkouts import Checkout, deploy_previous_release, take_over
from tests.support.polling import wait_for
from tests.support.stack_data import cdc_pipeline, flink_ids, kafka_state, offsets_gone_back, table_snapshots

FIRST_PORT = isolated.first_port_of("upgrade")
# Not an isolated stack's name: the stack lives on the previous release's backend (take_over names it).
STACK = f"upgrade-{FIRST_PORT}"
PREVIOUS = version.previous_release()

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
    pytest.mark.skipif(PREVIOUS is None, reason="this is the first release: nothing to upgrade from"),
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



def exported_resources(stack: str) -> list[dict[str, Any]]:
    return list(select(stack).export_stack().deployment["resources"])


# -- the upgrade ------------------------------------------------------------------------------------------------


@dataclass
class Upgrade:
    before: dict[str, Any]
    after: dict[str, Any]
    tables_before: dict[str, list[int]]
    tables_after: dict[str, list[int]]
    writer: IcebergWriter
    orders: OrdersWriter
    kafka_before: dict[str, Any]
    kafka_after: dict[str, Any]
    backup_file: str
    poller: downtime.DowntimePoller
    up_s: float
    previous_s: float


@pytest.fixture(scope="module")
def upgraded(previous_release: Checkout) -> Iterator[Upgrade]:
    assert PREVIOUS is not None
    # The same data directories for both programs: this checkout's state root, named to the clone.
    release = dataclasses.replace(previous_release, env={"LAKEHOUSE_STATE_DIR": str(state_root())}, timings={})
    shutil.rmtree(stack_state_dir(STACK), ignore_errors=True)
    handed_over, saved_backend = False, os.environ.get("PULUMI_BACKEND_URL")
    try:
        began = time.perf_counter()
        deploy_previous_release(release, STACK, FIRST_PORT, {})
        previous_s = time.perf_counter() - began
        before = release.outputs(STACK)
        print(f"\n== release {PREVIOUS[0]} ({PREVIOUS[1][:7]}) deployed stack {STACK} in {previous_s:.1f} s "
              f"({', '.join(f'{k} {v:.0f} s' for k, v in release.timings.items())})")

        # To work: declared tables with rows, a table of our own, orders into the CDC source, a backup.
        catalog = clients.pyiceberg_catalog(before, name="upgrade-setup")
        namespace = f"upgrade_{uuid.uuid4().hex[:6]}"
        catalog.create_namespace(namespace)
        catalog.create_table(f"{namespace}.commits", schema=SCHEMA)
        for declared in ("shop.customers",):
            table = catalog.load_table(declared)
            table.append(pa.Table.from_pylist([{"customer_id": i, "name": f"c{i}", "country": "NL"}
                                               for i in range(50)], schema=table.schema().as_arrow()))
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

            # This checkout takes the stack over: its stack file (salt, secrets) here, the release's backend.
            for key, value in take_over(release, STACK).items():
                os.environ[key] = value
            handed_over = True
            # What `make up` runs first (bootstrap): this release's artifacts, before anything is restarted.
            assert fetch(STACK, None) == 0
            poller = downtime.DowntimePoller({
                **downtime.service_checks(exported_resources(STACK)),
                "flink-orders-job": downtime.flink_job_check(before["profiles"]["host"]["flink"]["rest"],
                                                             before["profiles"]["host"]["flink"]["job"]["name"]),
                "connectors": downtime.connectors_check(
                    before["profiles"]["host"]["kafka_connect"]["url"],
                    [c["name"] for c in before["streams"]["connectors"]]),
            }).start()
            writer.phase = "during"
            try:
                up_s = commands.up(STACK, quiet=True)
                after = outputs(STACK)
                # Everything back: the job and the connectors run again, then a few more commits after the upgrade.
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
        print("\n" + poller.report(f"downtime while release {PREVIOUS[0]} -> {version.PLATFORM_VERSION} "
                                   f"(pulumi up {up_s:.1f} s)"))
        yield Upgrade(before, after, tables_before, {}, writer, orders, kafka_before, {}, backup_file, poller, up_s,
                      previous_s)
    finally:
        with contextlib.suppress(Exception):
            if handed_over:
                commands.down(STACK, quiet=True)
                forget(STACK)
            else:
                release.down(STACK)
        isolated.remove_stack_file(STACK)
        if saved_backend is None:
            os.environ.pop("PULUMI_BACKEND_URL", None)
        else:
            os.environ["PULUMI_BACKEND_URL"] = saved_backend


def test_upgrade_reports_this_release(upgraded: Upgrade) -> None:
    assert upgraded.after.get("platform_version") == version.PLATFORM_VERSION
    assert not any(o.still_down for o in upgraded.poller.outages.values()), upgraded.poller.report("still down")


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
    """Last (file order): the restore stops and starts the catalog."""
    from lakehouse_platform.control import procedures
    from lakehouse_platform.runtime.config import from_outputs

    config, creds = from_outputs(upgraded.after)
    report = procedures.restore(STACK, upgraded.after, config, creds, backup_file=upgraded.backup_file)
    unreadable = {t: r for t, r in report["tables"].items() if "error" in r}
    print(f"\n== restore of the pre-upgrade backup {os.path.basename(upgraded.backup_file)}: {len(report['tables'])} "
          f"tables read back, rolled forward {report['rolled_forward']}, {report['seconds']['total_s']} s")
    assert not unreadable, unreadable
    commits = [s.snapshot_id for s in clients.pyiceberg_catalog(upgraded.after, name="upgrade-restored")
               .load_table(upgraded.writer.table).snapshots()]
    assert set(upgraded.writer.acknowledged) <= set(commits)
