"""Tables as code against a real PyIceberg catalog (SQLite-backed, local files): create, evolve, refuse, never drop."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from lakehouse_platform.config import load_platform
from lakehouse_platform.runtime import tables
from tests.support.stacks import stack_platform

_PLATFORM = stack_platform("native")
_PLATFORM["tables"] = [{
    "namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
    "columns": [{"name": "order_id", "type": "long", "required": True}, {"name": "customer_id", "type": "int"},
                {"name": "amount", "type": "decimal(10,2)"}, {"name": "order_ts", "type": "timestamptz"}],
    "partition_by": [{"source": "order_ts", "transform": "day"}],
}]
_SPEC = load_platform(_PLATFORM)
# As the deployment applies it: the spec with the platform's table properties (PlatformSpec.declaration).
ORDERS = _SPEC.declaration(_SPEC.tables[0])


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    return SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")


def test_a_declared_table_is_created_with_its_schema_spec_owner_and_promises(catalog: SqlCatalog) -> None:
    result = tables.apply_table(catalog, ORDERS)
    assert result["action"] == "created"
    table = catalog.load_table("shop.orders")
    assert [(f.name, str(f.field_type), f.required) for f in table.schema().fields] == [
        ("order_id", "long", True), ("customer_id", "int", False), ("amount", "decimal(10, 2)", False),
        ("order_ts", "timestamptz", False)]
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [("order_ts_day", "day")]
    assert table.properties["owner"] == "bookshop data engineering"
    assert table.properties["platform.freshness-minutes"] == "60"
    assert table.properties["platform.maintenance"] == ("expire_snapshots,rewrite_data_files,rewrite_manifests,"
                                                        "remove_orphan_files")
    assert table.properties["write.metadata.delete-after-commit.enabled"] == "true"
    # The retention's age, for other engines' expiry (7 days: the stack sets no retention of its own).
    assert table.properties["history.expire.max-snapshot-age-ms"] == str(7 * 86400 * 1000)
    assert table.properties["commit.manifest.min-count-to-merge"] == "100"


def test_applying_twice_changes_nothing(catalog: SqlCatalog) -> None:
    tables.apply_table(catalog, ORDERS)
    location = catalog.load_table("shop.orders").metadata_location
    result = tables.apply_table(catalog, ORDERS)
    assert result["action"] == "unchanged" and result["changes"] == []
    assert catalog.load_table("shop.orders").metadata_location == location  # no commit at all


def test_a_changed_declaration_is_an_evolution_of_the_same_table(catalog: SqlCatalog) -> None:
    created = tables.apply_table(catalog, ORDERS)
    evolved = copy.deepcopy(ORDERS)
    evolved["columns"][1]["type"] = "long"  # int -> long: a promotion Iceberg makes in place
    evolved["columns"][2]["type"] = "decimal(12,2)"
    evolved["columns"].append({"name": "channel", "type": "string", "required": False, "doc": "web or shop"})
    evolved["columns"] = [c for c in evolved["columns"] if c["name"] != "amount"] + [evolved["columns"][2]]
    evolved["partition_by"] = [{"source": "customer_id", "transform": "bucket", "width": 8}]
    evolved["owner"] = "sales analytics"
    result = tables.apply_table(catalog, evolved)
    table = catalog.load_table("shop.orders")
    assert result["action"] == "evolved"
    assert result["table_uuid"] == created["table_uuid"]  # the same table: evolved, never recreated
    assert {str(f.field_type) for f in table.schema().fields if f.name == "customer_id"} == {"long"}
    assert table.schema().find_field("amount").field_type.precision == 12
    assert table.schema().find_field("channel").doc == "web or shop"
    assert [f.name for f in table.spec().fields] == ["customer_id_bucket"]
    assert len(table.specs()) == 2  # the old spec is kept for the files written under it
    assert table.properties["owner"] == "sales analytics"
    assert "add column channel string" in result["changes"]
    assert "remove partition field order_ts_day (existing files keep their spec)" in result["changes"]


def test_a_column_no_longer_declared_is_kept_and_reported(catalog: SqlCatalog) -> None:
    tables.apply_table(catalog, ORDERS)
    fewer = copy.deepcopy(ORDERS)
    fewer["columns"] = [c for c in fewer["columns"] if c["name"] != "customer_id"]
    result = tables.apply_table(catalog, fewer)
    assert result["kept_undeclared_columns"] == ["customer_id"]
    assert "customer_id" in [f.name for f in catalog.load_table("shop.orders").schema().fields]


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["columns"][1].update(type="string"),
     "columns.customer_id: int cannot become string in place; Iceberg promotes only int -> long, float -> double "
     "and decimal(P,S) -> decimal(P',S), P' > P"),
    (lambda d: d["columns"][1].update(required=True),
     "columns.customer_id: an optional column cannot become required in place; declare it required: false"),
    (lambda d: d["columns"].append({"name": "region", "type": "string", "required": True}),
     "columns.region: a new column cannot be required (existing rows have no value); declare it required: false"),
])
def test_an_evolution_iceberg_cannot_make_is_refused_and_nothing_is_committed(catalog: SqlCatalog, change,
                                                                              message: str) -> None:
    tables.apply_table(catalog, ORDERS)
    location = catalog.load_table("shop.orders").metadata_location
    wrong = copy.deepcopy(ORDERS)
    change(wrong)
    wrong["owner"] = "someone else"  # a valid change in the same declaration is not applied either
    with pytest.raises(tables.TableEvolutionError) as caught:
        tables.apply_table(catalog, wrong)
    assert str(caught.value) == ("table shop.orders cannot be evolved to its declaration (nothing was changed):\n"
                                 f"  - {message}")
    assert catalog.load_table("shop.orders").metadata_location == location


def test_a_table_that_exists_before_the_platform_is_adopted(catalog: SqlCatalog) -> None:
    catalog.create_namespace("shop")
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog.create_table("shop.orders", schema=Schema(NestedField(1, "order_id", LongType(), required=True)))
    result = tables.apply_table(catalog, ORDERS)
    assert result["action"] == "evolved"
    assert [f.name for f in catalog.load_table("shop.orders").schema().fields] == [
        "order_id", "customer_id", "amount", "order_ts"]


def test_the_same_declaration_as_idempotent_trino_statements() -> None:
    """What the aws target runs through Trino (each statement was run twice on Trino 476, see tables.py)."""
    statements = tables.trino_statements("polaris", ORDERS)
    table = '"polaris"."shop"."orders"'
    assert statements[0] == 'CREATE SCHEMA IF NOT EXISTS "polaris"."shop"'
    assert statements[1].startswith(
        f'CREATE TABLE IF NOT EXISTS {table} ("order_id" bigint NOT NULL, "customer_id" integer, '
        '"amount" decimal(10,2), "order_ts" timestamp(6) with time zone) WITH (format_version = 2, '
        "partitioning = ARRAY['day(order_ts)'], extra_properties = MAP(ARRAY['write.metadata.delete-after-commit"
        ".enabled', ")
    assert "'owner', 'platform.freshness-minutes'" in statements[1] and "'bookshop data engineering', '60'" in statements[1]
    assert f'ALTER TABLE {table} ADD COLUMN IF NOT EXISTS "order_id" bigint' in statements  # never NOT NULL when added
    assert f'ALTER TABLE {table} ALTER COLUMN "customer_id" SET DATA TYPE integer' in statements
    assert statements[-1].startswith(f"ALTER TABLE {table} SET PROPERTIES extra_properties = MAP(")
    # Trino refuses commit.retry.num-retries in extra_properties: it is its own max_commit_retry.
    assert "commit.retry.num-retries" not in statements[1] and statements[1].endswith(", max_commit_retry = 20)")
    assert statements[-1].endswith(", max_commit_retry = 20")
    assert "commit.retry.num-retries" not in tables.PROPERTY_KEYS
    assert not any("DROP" in s or "partitioning" in s for s in statements[2:])
    quoted = copy.deepcopy(ORDERS)
    quoted["owner"] = "O'Brien's team"
    assert "'O''Brien''s team'" in tables.trino_statements("polaris", quoted)[1]
