-- The bookshop's orders: the CDC source Debezium reads (kafka_connect.cdc_source).
CREATE TABLE IF NOT EXISTS public.orders (
    order_id    bigint        PRIMARY KEY,
    customer_id integer       NOT NULL,
    book_isbn   text          NOT NULL,
    quantity    integer       NOT NULL CHECK (quantity > 0),
    unit_price  numeric(10,2) NOT NULL CHECK (unit_price >= 0),
    status      text          NOT NULL CHECK (status IN ('placed','paid','shipped','delivered','cancelled')),
    order_ts    timestamp     NOT NULL,
    updated_at  timestamp     NOT NULL DEFAULT (now() AT TIME ZONE 'utc')
)
