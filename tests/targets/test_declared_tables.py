"""The DeclaredTable provider for real: serialised by value, create/update/delete against a real PyIceberg catalog."""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lakehouse_platform.targets import declared_tables as dt
from tests.support import REPO_ROOT

TABLE = {"namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60.0,
         "columns": [{"name": "order_id", "type": "long", "required": True}], "maintenance": ["expire_snapshots"]}


def props(tmp_path: Path, table: dict | None = None) -> dict:
    catalog = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    return {"table": copy.deepcopy(table or TABLE), "catalog": catalog, "labels": {}}


def test_the_provider_creates_evolves_and_never_drops(tmp_path: Path) -> None:
    provider = dt.DeclaredTableProvider()
    created = provider.create(props(tmp_path))
    assert created.id == "shop.orders" and created.outs["result"]["action"] == "created"
    wider = copy.deepcopy(TABLE)
    wider["columns"].append({"name": "channel", "type": "string"})
    diff = provider.diff("shop.orders", created.outs, props(tmp_path, wider))
    assert diff.changes and not diff.replaces  # an evolution, never a replacement
    updated = provider.update("shop.orders", created.outs, props(tmp_path, wider))
    assert updated.outs["result"]["changes"] == ["add column channel string"]
    assert updated.outs["result"]["table_uuid"] == created.outs["result"]["table_uuid"]
    assert not provider.diff("shop.orders", updated.outs, props(tmp_path, wider)).changes  # floats from protobuf
    provider.delete("shop.orders", updated.outs)
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("declared-tables", **props(tmp_path)["catalog"])  # SqlCatalog keys rows by name
    assert [f.name for f in catalog.load_table("shop.orders").schema().fields] == ["order_id", "channel"]
    renamed = props(tmp_path, {**wider, "name": "orders_v2"})
    assert provider.diff("shop.orders", updated.outs, renamed).replaces == ["table"]


def test_an_impossible_evolution_fails_the_update_with_the_column_named(tmp_path: Path) -> None:
    provider = dt.DeclaredTableProvider()
    created = provider.create(props(tmp_path))
    narrower = copy.deepcopy(TABLE)
    narrower["columns"][0]["type"] = "int"
    with pytest.raises(dt.DeclaredTableError, match=r"columns\.order_id: long cannot become int in place"):
        provider.update("shop.orders", created.outs, props(tmp_path, narrower))


def test_the_serialized_provider_loads_by_reference_in_a_provider_process(tmp_path: Path) -> None:
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(dt.DeclaredTableProvider())
    assert blob == serialize_provider(dt.DeclaredTableProvider()), "deterministic, or every up shows a diff"
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"
    code = (
        "import base64, json, sys, dill\n"
        "p = dill.loads(base64.b64decode(sys.stdin.readline()))\n"
        "props = json.loads(sys.stdin.readline())\n"
        "print(type(p).__name__, p.create(props).outs['result']['action'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], input=f"{blob}\n{json.dumps(props(tmp_path))}\n", cwd="/",
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["DeclaredTableProvider", "created"]


def test_a_table_changed_by_hand_is_put_back_and_a_missing_one_is_not_recreated(tmp_path: Path) -> None:
    from pyiceberg.catalog import load_catalog

    provider = dt.DeclaredTableProvider()
    created = provider.create(props(tmp_path))
    assert not provider.diff("shop.orders", created.outs, props(tmp_path)).changes
    catalog = load_catalog("declared-tables", **props(tmp_path)["catalog"])
    with catalog.load_table("shop.orders").transaction() as tx:
        tx.set_properties({"owner": "someone who was not asked"})
    assert provider.diff("shop.orders", created.outs, props(tmp_path)).changes  # drift, same declaration
    updated = provider.update("shop.orders", created.outs, props(tmp_path))
    assert updated.outs["result"]["changes"] == ["set properties owner"]
    assert catalog.load_table("shop.orders").properties["owner"] == "bookshop data engineering"
    catalog.drop_table("shop.orders")
    assert not provider.diff("shop.orders", updated.outs, props(tmp_path)).changes
