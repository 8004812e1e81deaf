"""The bookshop's CDC source: its schema and seed, the publication and slot Debezium reads, and their teardown."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.model import DebeziumPostgresSpec
from lakehouse_platform.services.kafka_connect.config import CDC_USER

#: Orders the seed generates, and the window they span (nine days from 2026-03-01 00:00 UTC).
SEED_ORDERS = 60_000
SEED_START = "2026-03-01 00:00:00"
SEED_SPAN_MS = 9 * 86_400_000


def sql_file(name: str) -> str:
    """A statement of this package's ``.sql`` files, its ``--`` comment lines left out."""
    text = Path(__file__).with_name(name).read_text(encoding="utf-8")
    return "\n" + "".join(line for line in text.splitlines(keepends=True) if not line.startswith("--")).rstrip("\n")


SCHEMA_SQL = sql_file("bookshop-schema.sql")
#: Deterministic seed rows (the file says how): every target seeds byte-identical orders.
SEED_SQL = sql_file("bookshop-seed.sql").format(seed_orders=SEED_ORDERS, seed_start=SEED_START,
                                                seed_span_ms=SEED_SPAN_MS)


def source_statements(source: DebeziumPostgresSpec, with_role: bool = True) -> tuple[str, ...]:
    """Everything the CDC source needs, idempotent, in order: schema, seed, role, publication, slot.

    ``{cdc_password}`` is bound by the step (a literal composed by the driver, never string-built).
    The slot comes last and alone: PostgreSQL refuses to create a logical slot in a transaction
    that has written. ``with_role=False`` leaves out the connector's own role (on aws Debezium logs
    in as RDS's master user, whose password RDS keeps).
    """
    tables = ", ".join(source.tables)
    role = (
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{CDC_USER}') THEN "
        f"CREATE ROLE {CDC_USER} WITH LOGIN REPLICATION; END IF; END $$",
        f"ALTER ROLE {CDC_USER} WITH LOGIN REPLICATION PASSWORD {{cdc_password}}",
        f"GRANT CONNECT ON DATABASE {source.database} TO {CDC_USER}",
        f"GRANT USAGE ON SCHEMA public TO {CDC_USER}",
        f"GRANT SELECT ON {tables} TO {CDC_USER}",
    ) if with_role else ()
    return (
        SCHEMA_SQL,
        # Full before-images in the WAL: updates and deletes carry every column, not only the key.
        "ALTER TABLE public.orders REPLICA IDENTITY FULL",
        "CREATE INDEX IF NOT EXISTS orders_order_ts_idx ON public.orders (order_ts)",
        SEED_SQL,
        *role,
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname = '{source.publication}') THEN "
        f"CREATE PUBLICATION {source.publication} FOR TABLE {tables}; END IF; END $$",
        # A changed table list reaches an existing publication too.
        f"ALTER PUBLICATION {source.publication} SET TABLE {tables}",
        f"SELECT pg_create_logical_replication_slot('{source.slot}', 'pgoutput') "  # noqa: S608 - validated names
        f"WHERE NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = '{source.slot}')",
    )


def teardown_statements(source: DebeziumPostgresSpec) -> tuple[str, ...]:
    """What ``source_statements`` made that costs anything while unused: the slot (WAL), the publication,
    the role. The orders stay (operational data is never destroyed by a deployment)."""
    tables = ", ".join(source.tables)
    return (
        f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "  # noqa: S608 - validated names
        f"WHERE slot_name = '{source.slot}' AND NOT active",
        f"DROP PUBLICATION IF EXISTS {source.publication}",
        f"DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{CDC_USER}') THEN "  # noqa: S608
        f"REVOKE ALL ON {tables} FROM {CDC_USER}; REVOKE USAGE ON SCHEMA public FROM {CDC_USER}; "
        f"REVOKE CONNECT ON DATABASE {source.database} FROM {CDC_USER}; DROP ROLE {CDC_USER}; END IF; END $$",
    )
