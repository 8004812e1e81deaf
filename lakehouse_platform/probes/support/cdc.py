"""CDC end to end, measured: changes in the bookshop's PostgreSQL, their events in the Iceberg table.

Shared by the CDC probe (``lakehouse_platform/probes/test_cdc.py``) and the latency benchmark (``bench/bench_cdc.py``).
Everything comes from the stack outputs: the database from ``endpoints.postgres`` and
``credentials.postgres_password``, the table and commit interval from ``streams.connectors``, the
catalog from the host profile, Connect's REST API from ``profiles.host.kafka_connect``.

The Iceberg sink writes Debezium events append-only: one row per change with a ``_cdc`` struct
(op I/U/D, the Kafka offset, the key). The **last state per key** is the row with the highest
``_cdc.offset`` per ``order_id`` that is not a delete; it must equal PostgreSQL's table.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from lakehouse_platform.probes.support import services
from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.services.capabilities import BROKER, DATABASE, DATABASE_USER
from lakehouse_platform.services.registry import registry

COLUMNS = "order_id, customer_id, book_isbn, quantity, unit_price, status, order_ts, updated_at"
LAST_STATE = """
SELECT order_id, customer_id, book_isbn, quantity, CAST(unit_price AS DECIMAL(10,2))::VARCHAR AS unit_price, status,
       epoch_ms(order_ts) AS order_ts, epoch_ms(updated_at) AS updated_at
FROM (SELECT *, row_number() OVER (PARTITION BY order_id ORDER BY _cdc."offset" DESC) AS rn FROM cdc)
WHERE rn = 1 AND _cdc.op <> 'D'
"""
PG_STATE = ("SELECT order_id, customer_id, book_isbn, quantity, unit_price::text, status, "
            "(extract(epoch FROM order_ts) * 1000)::bigint, (extract(epoch FROM updated_at) * 1000)::bigint "
            "FROM public.orders")
COMMIT_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
NOW_MS = "date_trunc('milliseconds', clock_timestamp() AT TIME ZONE 'utc')"
UPDATED_MS = "(extract(epoch FROM updated_at) * 1000)::bigint"


class CdcUnavailable(RuntimeError):
    """The stack runs no CDC pipeline (no source and sink connected by a topic)."""


@dataclass(frozen=True)
class Pipeline:
    """One source connector and the sink that commits its topic: what the probe exercises."""

    source: dict[str, Any]
    sink: dict[str, Any]
    visible_within_s: int
    connect_url: str | None

    @property
    def table(self) -> str:
        return str(self.sink["table"])


def pipeline(stack: Stack) -> Pipeline:
    streams = stack.outputs.get("streams") or {}
    connectors = streams.get("connectors") or []
    for source in (c for c in connectors if c["kind"] == "debezium-postgres"):
        for sink in (c for c in connectors if c["kind"] == "iceberg-sink"):
            if set(source["topics"]) & set(sink["topics"]) and sink.get("cdc"):
                connect = (stack.host_profiles.get("kafka_connect") or {}).get("url")
                return Pipeline(source, sink, int(streams["cdc_visible_within_s"]), connect)
    raise CdcUnavailable("the stack declares no Debezium source whose topic an Iceberg sink (cdc) commits")


def pg_connect(stack: Stack, database: str):
    import psycopg

    name = services.provider(stack, DATABASE)
    address = stack.endpoint(name, "pg") if name else None
    if address is None:
        raise CdcUnavailable("the platform's database is not reachable from this host (no endpoint in the outputs)")
    host, port = address.rsplit(":", 1)
    return psycopg.connect(host=host, port=int(port), user=DATABASE_USER, dbname=database, autocommit=True,
                           password=stack.credentials.get("postgres_password", ""), connect_timeout=15)


def pg_state(conn) -> set[tuple]:
    return {(r[0], r[1], r[2], r[3], r[4], r[5], int(r[6]), int(r[7])) for r in conn.execute(PG_STATE).fetchall()}


def iceberg_state(arrow_table) -> tuple[set[tuple], int, int]:
    """(last state per key, rows, highest offset) of the sink's table."""
    import duckdb

    con = duckdb.connect()
    con.register("cdc", arrow_table)
    state = {tuple(r) for r in con.execute(LAST_STATE).fetchall()}
    top = con.execute('SELECT max(_cdc."offset") FROM cdc').fetchone()[0]
    con.close()
    return state, arrow_table.num_rows, -1 if top is None else int(top)


def connector_states(connect_url: str | None) -> dict[str, Any]:
    """Every connector's state as Connect reports it (evidence for a failure message)."""
    if not connect_url:
        return {}
    try:
        body = requests.get(f"{connect_url}/connectors?expand=status", timeout=10).json()
        return {n: {"connector": v["status"]["connector"]["state"],
                    "tasks": [t["state"] for t in v["status"]["tasks"]],
                    "trace": (v["status"]["connector"].get("trace") or next(
                        (t.get("trace") for t in v["status"]["tasks"] if t.get("trace")), ""))[:400]}
                for n, v in body.items()}
    except (requests.RequestException, ValueError, KeyError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _bootstrap(stack: Stack) -> str | None:
    """The broker's bootstrap servers as the host reaches them (its client profile), None without a broker."""
    broker = services.provider(stack, BROKER)
    profile = registry()[broker].profile if broker else None
    return (stack.host_profiles.get(profile.key) or {}).get("bootstrap.servers") if profile else None


def topic_end_offsets(stack: Stack, topics: list[str]) -> dict[str, Any]:
    """High watermark of each topic's partition 0: whether events reached Kafka at all (evidence)."""
    bootstrap = _bootstrap(stack)
    if not bootstrap:
        return {}
    try:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{stack.run_id}",
                             "enable.auto.commit": False})
        try:
            return {t: consumer.get_watermark_offsets(TopicPartition(t, 0), timeout=10)[1] for t in topics}
        finally:
            consumer.close()
    except Exception as exc:  # noqa: BLE001 - evidence only
        return {"error": f"{type(exc).__name__}: {exc}"}


def last_record_offsets(stack: Stack, topics: list[str], window: int = 500) -> dict[str, dict[str, int | None]]:
    """Each topic's partition 0: its high watermark (``end``, evidence) and the offset of its last committed record
    (``last_record``, None when none is in its last ``window``); empty without a broker, a topic's values None
    when Kafka did not answer for it.

    Not the high watermark: exactly-once sources write in transactions, and each commit marker takes an offset of
    its own after the records, which no consumer ever sees (the sink's table cannot hold it).
    """
    bootstrap = _bootstrap(stack)
    if not bootstrap:
        return {}
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{stack.run_id}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    found: dict[str, dict[str, int | None]] = {}
    try:
        for topic in topics:
            found[topic] = {"end": None, "last_record": None}  # unknown until read: the table alone decides
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            found[topic]["end"] = high
            if high > low:
                consumer.assign([TopicPartition(topic, 0, max(low, high - window))])
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    message = consumer.poll(0.5)
                    if message is None:
                        continue
                    if message.error():
                        if message.error().code() == KafkaError._PARTITION_EOF:
                            break
                        continue
                    found[topic]["last_record"] = message.offset()
    except KafkaException:
        pass
    finally:
        consumer.close()
    return found


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo), 2)


@dataclass
class Change:
    order_id: int
    op: str
    updated_ms: int
    commit_ms: int


@dataclass
class Run:
    """What one CDC run made and observed."""

    changes: list[Change] = field(default_factory=list)
    start_offset: int = 0
    converged_s: float | None = None
    seen: list[tuple[int, int, float]] = field(default_factory=list)  # snapshot id, timestamp ms, seen at ms
    result: dict[str, Any] = field(default_factory=dict)


def wait_converged(stack: Stack, pipe: Pipeline, timeout_s: float) -> tuple[bool, dict[str, Any]]:
    """Until the table holds every event of the topic and its last state per key equals PostgreSQL's.

    Both: a source that snapshots again (its offsets were reset) appends a second image of every row,
    and the table can agree with PostgreSQL while that image is still arriving.
    """
    catalog = stack.catalog()
    deadline = time.monotonic() + timeout_s
    evidence: dict[str, Any] = {}
    with pg_connect(stack, pipe.source["database"]) as conn:
        while time.monotonic() < deadline:
            try:
                table = catalog.load_table(pipe.table)
            except Exception as exc:  # noqa: BLE001 - NoSuchTable until the first commit
                evidence = {"table": f"{type(exc).__name__}: {exc}"}
                time.sleep(2)
                continue
            if table.current_snapshot() is None:
                evidence = {"table": "exists, no snapshot yet"}
                time.sleep(2)
                continue
            ice, rows, top = iceberg_state(table.scan().to_arrow())
            pg = pg_state(conn)
            offsets = last_record_offsets(stack, list(pipe.source["topics"]))
            last = next((o["last_record"] for o in offsets.values() if isinstance(o["last_record"], int)), None)
            evidence = {"pg_rows": len(pg), "iceberg_rows": rows, "iceberg_last_state": len(ice),
                        "only_in_pg": len(pg - ice), "only_in_iceberg": len(ice - pg), "max_offset": top,
                        "topic_offsets": offsets}
            if ice == pg and (last is None or top >= last):
                return True, evidence
            time.sleep(2)
    return False, evidence


def make_changes(stack: Stack, pipe: Pipeline, count: int, rate: float, seed: int, run: Run) -> None:
    """``count`` changes at ``rate`` per second, one transaction each: inserts of new orders, updates of
    seeded and of just-made orders, deletes of both. Commit time = clock_timestamp() of the statement."""
    rng = random.Random(seed)
    with pg_connect(stack, pipe.source["database"]) as conn:
        next_id = int(conn.execute("SELECT coalesce(max(order_id), 0) + 1 FROM public.orders").fetchone()[0])
        existing = [r[0] for r in conn.execute(
            "SELECT order_id FROM public.orders WHERE order_id <= 60000 ORDER BY md5(order_id::text || %s) LIMIT %s",
            (str(seed), count)).fetchall()]
        mine: list[int] = []
        began = time.monotonic()
        for index in range(count):
            wait = began + index / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            roll = rng.random()
            if roll < 0.35 or (not mine and roll < 0.55) or not existing:
                order_id, op = next_id, "I"
                next_id += 1
                row = conn.execute(
                    f"INSERT INTO public.orders ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, 'placed', {NOW_MS}, {NOW_MS}) "
                    f"RETURNING {COMMIT_MS}, {UPDATED_MS}",
                    (order_id, rng.randrange(1, 5001), f"978{rng.randrange(10**10):010d}", rng.randrange(1, 5),
                     rng.choice(["9.99", "14.99", "24.00"]))).fetchone()
                mine.append(order_id)
            elif roll < 0.55:
                order_id, op = rng.choice(mine), "U"
                row = conn.execute(
                    f"UPDATE public.orders SET status = 'paid', quantity = quantity + 1, updated_at = {NOW_MS} "
                    f"WHERE order_id = %s RETURNING {COMMIT_MS}, {UPDATED_MS}", (order_id,)).fetchone()
            elif roll < 0.85:
                order_id, op = existing.pop(), "U"
                row = conn.execute(
                    f"UPDATE public.orders SET status = 'shipped', unit_price = unit_price + 0.01, "
                    f"updated_at = {NOW_MS} WHERE order_id = %s RETURNING {COMMIT_MS}, {UPDATED_MS}",
                    (order_id,)).fetchone()
            else:
                if mine and rng.random() < 0.3:
                    order_id = mine.pop(rng.randrange(len(mine)))
                else:
                    order_id = existing.pop()
                op = "D"
                row = conn.execute(f"DELETE FROM public.orders WHERE order_id = %s RETURNING {COMMIT_MS}, {UPDATED_MS}",
                                   (order_id,)).fetchone()
            run.changes.append(Change(order_id, op, int(row[1]), int(row[0])))


def exercise(stack: Stack, pipe: Pipeline, count: int, rate: float, bound_s: float, seed: int = 7) -> Run:
    """Make ``count`` changes, wait at most ``bound_s`` after the last for their events, check, measure."""
    from pyiceberg.expressions import GreaterThanOrEqual

    catalog = stack.catalog()
    table = catalog.load_table(pipe.table)
    run = Run()
    _, _, top = iceberg_state(table.scan().to_arrow())
    run.start_offset = top + 1
    known = {s.snapshot_id for s in table.snapshots()}
    began_ms = time.time() * 1000
    stop = threading.Event()

    def poll() -> None:  # every new snapshot and when it was seen
        watched = catalog.load_table(pipe.table)
        while not stop.is_set():
            try:
                watched.refresh()
                for snap in watched.snapshots():
                    if snap.snapshot_id not in known:
                        known.add(snap.snapshot_id)
                        run.seen.append((snap.snapshot_id, snap.timestamp_ms, time.time() * 1000))
            except Exception:  # noqa: BLE001 - a transient catalog error; keep polling
                pass
            stop.wait(0.25)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        make_changes(stack, pipe, count, rate, seed, run)
        last = time.monotonic()
        deadline = last + bound_s
        while time.monotonic() < deadline:
            table.refresh()
            arrived = table.scan(row_filter=GreaterThanOrEqual("_cdc.offset", run.start_offset),
                                 selected_fields=("order_id",)).to_arrow().num_rows
            if arrived >= count:
                run.converged_s = time.monotonic() - last
                break
            time.sleep(0.5)
        time.sleep(1.0)
    finally:
        stop.set()
        poller.join(5)
    run.result = check(stack, pipe, run, table, began_ms)
    return run


def check(stack: Stack, pipe: Pipeline, run: Run, table, began_ms: float) -> dict[str, Any]:
    """Exactly the events, the last state per key, the sink's commits, and the latency of each change."""
    import duckdb
    from pyiceberg.expressions import GreaterThanOrEqual

    table.refresh()
    arrow = table.scan().to_arrow()
    con = duckdb.connect()
    con.register("cdc", arrow)
    start = run.start_offset
    events, distinct = con.execute(
        f'SELECT count(*), count(DISTINCT _cdc."offset") FROM cdc WHERE _cdc."offset" >= {start}').fetchone()
    ops = dict(con.execute(f'SELECT _cdc.op, count(*) FROM cdc WHERE _cdc."offset" >= {start} GROUP BY 1').fetchall())
    con.close()
    ice, rows, _ = iceberg_state(arrow)
    with pg_connect(stack, pipe.source["database"]) as conn:
        pg = pg_state(conn)
    new = [s for s in table.snapshots() if s.timestamp_ms >= began_ms - 1000]
    summaries = [dict(s.summary.additional_properties) for s in new] if new else []
    committed = [m for m in summaries if "kafka.connect.commit-id" in m]

    # Latency: the first snapshot holding each change, by its commit timestamp.
    seen = {sid: (ts, at) for sid, ts, at in run.seen}
    first: dict[tuple, int] = {}
    for snap in sorted(table.snapshots(), key=lambda s: s.sequence_number):
        if snap.snapshot_id not in seen:
            continue
        for row in table.scan(snapshot_id=snap.snapshot_id, row_filter=GreaterThanOrEqual("_cdc.offset", start),
                              selected_fields=("order_id", "updated_at", "_cdc")).to_arrow().to_pylist():
            op = row["_cdc"]["op"]
            key = (row["order_id"], op, None if op == "D" else int(row["updated_at"].timestamp() * 1000))
            first.setdefault(key, snap.snapshot_id)
    latency, observed, unmatched = [], [], 0
    for change in run.changes:
        sid = first.get((change.order_id, change.op, None if change.op == "D" else change.updated_ms))
        if sid is None:
            unmatched += 1
            continue
        ts, at = seen[sid]
        latency.append((ts - change.commit_ms) / 1000)
        observed.append((at - change.commit_ms) / 1000)
    made = {op: sum(1 for c in run.changes if c.op == op) for op in "IUD"}
    return {
        "changes": len(run.changes), "ops_made": made, "events_after_start": events, "distinct_offsets": distinct,
        "ops_in_table": ops, "exactly_the_events": events == distinct == len(run.changes) and ops == {
            k: v for k, v in made.items() if v},
        "last_state_equal": ice == pg, "pg_rows": len(pg), "iceberg_last_state_rows": len(ice),
        "only_in_pg": len(pg - ice), "only_in_iceberg": len(ice - pg), "table_rows": rows,
        "converged_s_after_last_change": None if run.converged_s is None else round(run.converged_s, 1),
        "new_snapshots": len(new), "snapshots_with_commit_id": len(committed),
        "sink_summary_keys": sorted({k for m in committed for k in m if k.startswith("kafka.")}),
        "latency_s": {"n": len(latency), "p50": pct(latency, 50), "p99": pct(latency, 99),
                      "max": round(max(latency), 1) if latency else None,
                      "mean": round(statistics.mean(latency), 2) if latency else None},
        "observed_latency_s": {"p50": pct(observed, 50), "p99": pct(observed, 99)},
        "unmatched_changes": unmatched,
    }
