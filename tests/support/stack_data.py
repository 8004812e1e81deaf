"""What a deployed stack holds, read from the host: what the upgrade and the version-bump tests compare before and
after a change (tables and their snapshots, Kafka's topics and committed offsets, the streaming job's rows, the
bookshop's orders)."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.control import clients


def table_snapshots(out: dict[str, Any], name: str = "stack-data") -> dict[str, list[int]]:
    """Every table of every namespace of the default catalog: its snapshot ids, oldest first."""
    catalog = clients.pyiceberg_catalog(out, name=name)
    found = {}
    for namespace in catalog.list_namespaces():
        for ident in catalog.list_tables(namespace):
            table = ".".join(ident)
            found[table] = [s.snapshot_id for s in catalog.load_table(table).snapshots()]
    return found


def kafka_state(out: dict[str, Any]) -> dict[str, Any]:
    """Topics, and each consumer group's committed offsets (topic:partition -> offset)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": out["profiles"]["host"]["kafka"]["bootstrap.servers"]})
    topics = sorted(t for t in admin.list_topics(timeout=20).topics if not t.startswith("__"))
    groups = [g.group_id for g in admin.list_consumer_groups(request_timeout=20).result().valid]
    offsets: dict[str, dict[str, int]] = {}
    for group in groups:
        result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result()
        offsets[group] = {f"{tp.topic}:{tp.partition}": tp.offset for tp in result.topic_partitions if tp.offset >= 0}
    return {"topics": topics, "offsets": offsets}


def offsets_gone_back(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[int, int | None]]:
    """Committed offsets that are lower (or missing) after than before: group/topic:partition -> (before, after)."""
    return {f"{g}/{tp}": (off, after["offsets"].get(g, {}).get(tp)) for g, parts in before["offsets"].items()
            for tp, off in parts.items() if after["offsets"].get(g, {}).get(tp, -1) < off}


def flink_ids(out: dict[str, Any], name: str = "stack-data-flink") -> tuple[int, int]:
    """(rows, distinct order ids) of the streaming job's table."""
    job = out["profiles"]["host"]["flink"]["job"]
    table = clients.pyiceberg_catalog(out, name=name).load_table(job["table"])
    ids = table.scan(selected_fields=("order_id",)).to_arrow().column("order_id").to_pylist()
    return len(ids), len(set(ids))


def postgres_count(out: dict[str, Any], database: str, sql: str) -> int:
    """One number from the stack's PostgreSQL (``sql`` returns a single count)."""
    import psycopg

    host, port = out["endpoints"]["postgres"]["pg"]["external"].rsplit(":", 1)
    with psycopg.connect(host=host, port=int(port), user="postgres", dbname=database, connect_timeout=5,
                         password=out["credentials"]["postgres_password"]) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def cdc_pipeline(out: dict[str, Any]) -> tuple[str, str]:
    """(the source database, the sink's table) of the stack's CDC pipeline."""
    connectors = (out.get("streams") or {}).get("connectors") or []
    source = next(c for c in connectors if c["kind"] == "debezium-postgres")
    sink = next(c for c in connectors if c["kind"] == "iceberg-sink" and set(c["topics"]) & set(source["topics"]))
    return source["database"], sink["table"]
