"""The bookshop's CDC source: its schema and seed, the publication and slot Debezium reads, and their teardown."""

from __future__ import annotations

from infra.services.kafka_connect.config import CDC_USER
from infra.spec import DebeziumPostgresSpec

#: Orders the seed generates, and the window they span (nine days from 2026-03-01 00:00 UTC).
SEED_ORDERS = 60_000


SEED_START = "2026-03-01 00:00:00"


SEED_SPAN_MS = 9 * 86_400_000


SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS public.orders (
    order_id    bigint        PRIMARY KEY,
    customer_id integer       NOT NULL,
    book_isbn   text          NOT NULL,
    quantity    integer       NOT NULL CHECK (quantity > 0),
    unit_price  numeric(10,2) NOT NULL CHECK (unit_price >= 0),
    status      text          NOT NULL CHECK (status IN ('placed','paid','shipped','delivered','cancelled')),
    order_ts    timestamp     NOT NULL,
    updated_at  timestamp     NOT NULL DEFAULT (now() AT TIME ZONE 'utc')
)"""


# Deterministic without any RNG state: every value is a function of md5(tag || id), so every
# target (psql in a job, the deploying host's driver) seeds byte-identical rows. timestamp, not
# timestamptz: Debezium (time.precision.mode=connect) maps it to Connect's Timestamp, an Iceberg
# timestamp column; timestamptz would arrive as a string. Millisecond precision: connect mode drops µs.
SEED_SQL = f"""
WITH h AS (
  SELECT i,
         ('x' || substr(md5('customer:' || i), 1, 7))::bit(28)::int AS hc,
         ('x' || substr(md5('book:' || i), 1, 7))::bit(28)::int AS hb,
         ('x' || substr(md5('pick:' || i), 1, 7))::bit(28)::int AS hp,
         ('x' || substr(md5('quantity:' || i), 1, 7))::bit(28)::int AS hq,
         ('x' || substr(md5('status:' || i), 1, 7))::bit(28)::int AS hs,
         ('x' || substr(md5('time:' || i), 1, 7))::bit(28)::int AS ht,
         ('x' || substr(md5('update:' || i), 1, 7))::bit(28)::int AS hu
  FROM generate_series(1, {SEED_ORDERS}) AS i
), books AS (
  SELECT b, core || ((10 - (SELECT sum(CASE WHEN k % 2 = 1 THEN 1 ELSE 3 END * substr(core, k, 1)::int)
                            FROM generate_series(1, 12) AS k) % 10) % 10)::text AS isbn,
         (ARRAY[7.99, 9.99, 12.50, 14.99, 19.99, 24.00, 29.95, 34.99, 49.00])[1 + hprice % 9] AS price
  FROM (SELECT b, '978' || lpad((('x' || substr(md5('isbn:' || b), 1, 8))::bit(32)::bigint % 1000000000)::text,
                                9, '0') AS core,
               ('x' || substr(md5('price:' || b), 1, 7))::bit(28)::int AS hprice
        FROM generate_series(0, 499) AS b) AS raw
), rows AS (
  SELECT i, 1 + hc % 5000 AS customer_id,
         -- half the orders pick a bestseller (a Pareto-skewed rank), half any of the 500 books
         CASE WHEN hp % 2 = 0 THEN least(floor(power((hb + 1)::float8 / 268435456, -1 / 1.2))::int - 1, 499)
              ELSE hb % 500 END AS book,
         (ARRAY[1, 1, 1, 1, 2, 2, 3, 4])[1 + hq % 8] AS quantity,
         CASE WHEN hs % 100 < 10 THEN 'placed' WHEN hs % 100 < 30 THEN 'paid' WHEN hs % 100 < 60 THEN 'shipped'
              WHEN hs % 100 < 95 THEN 'delivered' ELSE 'cancelled' END AS status,
         timestamp '{SEED_START}' + interval '1 millisecond'
           * floor(((i - 1) + ht::float8 / 268435456) * {SEED_SPAN_MS} / {SEED_ORDERS}) AS order_ts,
         hu % 259200 AS update_s
  FROM h
)
INSERT INTO public.orders (order_id, customer_id, book_isbn, quantity, unit_price, status, order_ts, updated_at)
SELECT i, customer_id, books.isbn, quantity, books.price, status, order_ts,
       CASE WHEN status = 'placed' THEN order_ts ELSE order_ts + update_s * interval '1 second' END
FROM rows JOIN books ON books.b = rows.book
WHERE NOT EXISTS (SELECT 1 FROM public.orders)
ORDER BY i"""  # noqa: S608 - built from this module's constants only


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
