"""What the writers write: rows of the run's own table (``ProbeBatches``), or tagged orders appended to a table
another writer owns (``OrderBatches``: the platform's streaming job's), each countable by batch afterwards."""

from __future__ import annotations

import collections
import datetime as dt
from dataclasses import dataclass

import tenacity


class ProbeBatches:
    """Rows of the run's own table (writer, seq, row, written_at); every row in it is the run's."""

    def schema(self):
        return _schema()

    def rows(self, writer: str, seq: int, count: int):
        return _rows(writer, seq, count)

    def count(self, table) -> tuple[collections.Counter, int]:
        """(rows per acknowledged batch, rows of the run) in the table."""
        data = table.scan(selected_fields=("writer", "seq")).to_arrow()
        per_batch = collections.Counter(zip(data.column("writer").to_pylist(), data.column("seq").to_pylist(),
                                            strict=True))
        return per_batch, data.num_rows


@dataclass
class OrderBatches:
    """Orders appended to the streaming job's table, each tagged in ``status`` as ``<tag>/<writer>/<seq>``.

    Order ids are negative (the job's own ids count up from 0), so the run's rows never pass for the
    job's; only rows carrying the tag are the run's, and ``cleanup`` deletes them afterwards.
    """

    tag: str

    def schema(self):
        return None  # the job created the table

    def rows(self, writer: str, seq: int, count: int):
        import decimal

        import pyarrow as pa

        base = -(zlib_crc(writer) % 1000 + 1) * 10_000_000 - seq * 10_000
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        return pa.table({
            "order_id": pa.array([base - i for i in range(count)], pa.int64()),
            "customer_id": pa.array([1] * count, pa.int32()),
            "book_isbn": pa.array(["9780000000002"] * count, pa.string()),
            "quantity": pa.array([1] * count, pa.int32()),
            "unit_price": pa.array([decimal.Decimal("1.00")] * count, pa.decimal128(10, 2)),
            "status": pa.array([f"{self.tag}/{writer}/{seq}"] * count, pa.string()),
            "order_ts": pa.array([now] * count, pa.timestamp("us")),
        }, schema=pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("customer_id", pa.int32()),
                             pa.field("book_isbn", pa.string()), pa.field("quantity", pa.int32()),
                             pa.field("unit_price", pa.decimal128(10, 2)), pa.field("status", pa.string()),
                             pa.field("order_ts", pa.timestamp("us"))]))

    def _mine(self, table):
        from pyiceberg.expressions import StartsWith

        return table.scan(row_filter=StartsWith("status", f"{self.tag}/"), selected_fields=("status",)).to_arrow()

    def count(self, table) -> tuple[collections.Counter, int]:
        data = self._mine(table)
        per_batch: collections.Counter = collections.Counter()
        for status in data.column("status").to_pylist():
            _, writer, seq = status.rsplit("/", 2)
            per_batch[(writer, int(seq))] += 1
        return per_batch, data.num_rows

    def cleanup(self, catalog, ident: str) -> int:
        """Delete the run's rows from the job's table (retrying conflicts with the job's commits); rows deleted."""
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.expressions import StartsWith

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(CommitFailedException),
                                     stop=tenacity.stop_after_attempt(20), wait=tenacity.wait_random(0.2, 1.0),
                                     reraise=True)
        for attempt in retrying:
            with attempt:
                table = catalog.load_table(ident)
                mine = self._mine(table).num_rows
                if mine:
                    table.delete(StartsWith("status", f"{self.tag}/"))
        return mine


def zlib_crc(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode())


def _schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType, TimestamptzType

    return Schema(
        NestedField(1, "writer", StringType(), required=False),
        NestedField(2, "seq", IntegerType(), required=False),
        NestedField(3, "row", LongType(), required=False),
        NestedField(4, "written_at", TimestamptzType(), required=False),
    )


def _rows(writer: str, seq: int, count: int):
    import pyarrow as pa

    now = dt.datetime.now(dt.UTC)
    return pa.table({
        "writer": pa.array([writer] * count, pa.string()),
        "seq": pa.array([seq] * count, pa.int32()),
        "row": pa.array(range(count), pa.int64()),
        "written_at": pa.array([now] * count, pa.timestamp("us", tz="UTC")),
    })
