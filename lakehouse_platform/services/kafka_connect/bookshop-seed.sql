-- The bookshop's seed orders (kafka_connect.cdc_source fills {seed_orders}, {seed_start}, {seed_span_ms}).
-- Deterministic without any RNG state: every value is a function of md5(tag || id), so every
-- target (psql in a job, the deploying host's driver) seeds byte-identical rows. timestamp, not
-- timestamptz: Debezium (time.precision.mode=connect) maps it to Connect's Timestamp, an Iceberg
-- timestamp column; timestamptz would arrive as a string. Millisecond precision: connect mode drops µs.
WITH h AS (
  SELECT i,
         ('x' || substr(md5('customer:' || i), 1, 7))::bit(28)::int AS hc,
         ('x' || substr(md5('book:' || i), 1, 7))::bit(28)::int AS hb,
         ('x' || substr(md5('pick:' || i), 1, 7))::bit(28)::int AS hp,
         ('x' || substr(md5('quantity:' || i), 1, 7))::bit(28)::int AS hq,
         ('x' || substr(md5('status:' || i), 1, 7))::bit(28)::int AS hs,
         ('x' || substr(md5('time:' || i), 1, 7))::bit(28)::int AS ht,
         ('x' || substr(md5('update:' || i), 1, 7))::bit(28)::int AS hu
  FROM generate_series(1, {seed_orders}) AS i
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
         timestamp '{seed_start}' + interval '1 millisecond'
           * floor(((i - 1) + ht::float8 / 268435456) * {seed_span_ms} / {seed_orders}) AS order_ts,
         hu % 259200 AS update_s
  FROM h
)
INSERT INTO public.orders (order_id, customer_id, book_isbn, quantity, unit_price, status, order_ts, updated_at)
SELECT i, customer_id, books.isbn, quantity, books.price, status, order_ts,
       CASE WHEN status = 'placed' THEN order_ts ELSE order_ts + update_s * interval '1 second' END
FROM rows JOIN books ON books.b = rows.book
WHERE NOT EXISTS (SELECT 1 FROM public.orders)
ORDER BY i
