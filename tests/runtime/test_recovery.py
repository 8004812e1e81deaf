"""Recovery's logic for real: finding the newest metadata on storage, rolling a restored catalog forward."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lakehouse_platform.runtime import recovery


class FakeS3:
    """The two S3 calls recovery makes, over a dict of key -> bytes (one bucket)."""

    def __init__(self, objects: dict[str, bytes]):
        self.objects = objects

    def get_paginator(self, _name: str) -> Any:
        objects = self.objects

        class Paginator:
            def paginate(self, Bucket: str, Prefix: str = "") -> list[dict[str, Any]]:
                keys = sorted(k for k in objects if k.startswith(Prefix))
                return [{"Contents": [{"Key": k} for k in keys[:2]]}, {"Contents": [{"Key": k} for k in keys[2:]]}]

        return Paginator()

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        import io

        return {"Body": io.BytesIO(self.objects[Key])}


def meta(seq: int, updated: int) -> bytes:
    return json.dumps({"last-sequence-number": seq, "last-updated-ms": updated}).encode()


def test_the_newest_metadata_of_each_table_is_the_highest_version() -> None:
    s3 = FakeS3({
        "shop/orders/metadata/00001-aaaa.metadata.json": b"{}",
        "shop/orders/metadata/00012-bbbb.metadata.json": b"{}",
        "shop/orders/metadata/00003-cccc.metadata.json": b"{}",
        "shop/orders/metadata/snap-1-1-dddd.avro": b"",
        "shop/orders/data/00000-0-eeee.parquet": b"",
        "shop/customers/metadata/00002-aaaa.metadata.json": meta(2, 10),
        "shop/customers/metadata/00002-bbbb.metadata.json": meta(3, 20),  # two writers raced to version 2
        "notes.txt": b"",
    })
    found = recovery.tables_on_storage(s3, "s3://warehouse/")
    assert {k: (v.metadata_location, v.version, v.candidates) for k, v in found.items()} == {
        "shop.customers": ("s3://warehouse/shop/customers/metadata/00002-bbbb.metadata.json", 2, 2),
        "shop.orders": ("s3://warehouse/shop/orders/metadata/00012-bbbb.metadata.json", 12, 3),
    }


def test_trinos_unique_locations_and_a_name_in_two_directories() -> None:
    s3 = FakeS3({
        "shop/events-0123456789abcdef0123456789abcdef/metadata/00003-aaaa.metadata.json": meta(3, 100),
        # Dropped without purge, created again under a new directory: the one updated last is the table.
        "shop/events-fedcba9876543210fedcba9876543210/metadata/00001-bbbb.metadata.json": meta(1, 500),
        "shop/old-orders-not-a-uuid/metadata/00000-cccc.metadata.json": b"{}",
    })
    found = recovery.tables_on_storage(s3, "s3://warehouse/")
    assert found["shop.events"].metadata_location == (
        "s3://warehouse/shop/events-fedcba9876543210fedcba9876543210/metadata/00001-bbbb.metadata.json")
    assert "shop.old-orders-not-a-uuid" in found


def test_a_warehouse_prefix_is_not_part_of_the_namespace() -> None:
    s3 = FakeS3({"wh/shop/orders/metadata/00004-aaaa.metadata.json": b"{}"})
    assert list(recovery.tables_on_storage(s3, "s3://bucket/wh")) == ["shop.orders"]


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")


def _stored(catalog: SqlCatalog, ident: str) -> recovery.StoredTable:
    location = catalog.load_table(ident).metadata_location
    return recovery.StoredTable(ident, location, recovery.metadata_version(location) or 0, 1)


def test_roll_forward_brings_a_restored_catalog_to_storage_without_losing_a_file(catalog: SqlCatalog,
                                                                                 tmp_path: Path) -> None:
    catalog.create_namespace("shop")
    table = catalog.create_table("shop.orders", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    rows = pa.Table.from_pylist([{"id": 1}], schema=table.schema().as_arrow())
    table.append(rows)
    backed_up = catalog.load_table("shop.orders").metadata_location  # what a backup would hold
    table = catalog.load_table("shop.orders")
    table.append(rows)
    table.append(rows)
    newest = _stored(catalog, "shop.orders")
    catalog.create_table("shop.customers", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    unchanged = _stored(catalog, "shop.customers")
    created_after = catalog.create_table("shop.late", schema=Schema(NestedField(1, "id", LongType(),
                                                                               required=False)))
    late = _stored(catalog, "shop.late")
    files_before = sorted(p.name for p in (tmp_path / "warehouse").rglob("*") if p.is_file())

    # The restored catalog: orders at the backup's pointer, customers as it is, late unknown.
    catalog.drop_table("shop.orders")
    catalog.register_table("shop.orders", backed_up)
    catalog.drop_table("shop.late")
    assert catalog.load_table("shop.orders").scan().count() == 1

    actions = recovery.roll_forward(catalog, {s.identifier: s for s in (newest, unchanged, late)})
    assert [(a["table"], a["action"]) for a in actions] == [
        ("shop.orders", "rolled forward"), ("shop.customers", "current"), ("shop.late", "registered")]
    assert actions[0]["from_version"] == recovery.metadata_version(backed_up)
    assert catalog.load_table("shop.orders").scan().count() == 3
    assert catalog.load_table("shop.late").metadata.table_uuid == created_after.metadata.table_uuid
    files_after = sorted(p.name for p in (tmp_path / "warehouse").rglob("*") if p.is_file())
    assert files_after == files_before  # dropping a catalog entry to roll it forward never purges
    back = recovery.read_back(catalog, ["shop.orders", "shop.customers", "shop.nowhere"])
    assert back["shop.orders"]["rows"] == 3 and back["shop.customers"]["rows"] == 0
    assert "NoSuchTableError" in back["shop.nowhere"]["error"]


def test_offline_roll_forward_moves_a_restored_pointer_before_the_catalog_serves(catalog: SqlCatalog,
                                                                                 tmp_path: Path) -> None:
    """A live writer's table: its pointer is moved in the stopped catalog's database, so the writer's next
    commit builds on storage's newest metadata, never on the backup's (which would orphan its commits)."""
    catalog.create_namespace("shop")
    table = catalog.create_table("shop.orders", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    rows = pa.Table.from_pylist([{"id": 1}], schema=table.schema().as_arrow())
    table.append(rows)
    backed_up = catalog.load_table("shop.orders").metadata_location
    catalog.load_table("shop.orders").append(rows)
    newest = _stored(catalog, "shop.orders")
    catalog.create_table("shop.customers", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    unchanged = _stored(catalog, "shop.customers")
    catalog.drop_table("shop.orders")  # the restored database: orders at the backup's pointer
    catalog.register_table("shop.orders", backed_up)

    moved = recovery.roll_forward_offline(tmp_path / "catalog.db", {s.identifier: s for s in (newest, unchanged)})
    assert [(m["table"], m["from_version"], m["version"]) for m in moved] == [
        ("shop.orders", recovery.metadata_version(backed_up), newest.version)]
    restored = catalog.load_table("shop.orders")
    assert restored.metadata_location == newest.metadata_location and restored.scan().count() == 2
    assert catalog.load_table("shop.customers").metadata_location == unchanged.metadata_location


def test_the_pointers_a_restored_backup_holds_are_read_before_anything_moves_them(catalog: SqlCatalog,
                                                                                   tmp_path: Path) -> None:
    catalog.create_namespace("shop")
    table = catalog.create_table("shop.orders", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    assert recovery.pointers_in(tmp_path / "catalog.db") == {"shop.orders": table.metadata_location}
