"""The platform's PyIceberg writer against a real catalog (PyIceberg's SQL catalog on local files: offline)."""

from __future__ import annotations

import logging
from pathlib import Path

import pyiceberg.table
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from lakehouse_platform.probes.support import commits


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    found = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    found.create_namespace("n")
    found.create_table("n.t", commits.ProbeBatches().schema(), properties={"commit.manifest-merge.enabled": "true"})
    return found


def test_an_append_computes_the_transactions_metadata_once_per_staged_update(catalog, monkeypatch) -> None:
    calls: list[int] = []
    original = pyiceberg.table.update_table_metadata

    def counted(base, updates, *args, **kwargs):
        calls.append(len(updates))
        return original(base, updates, *args, **kwargs)

    monkeypatch.setattr(pyiceberg.table, "update_table_metadata", counted)
    writer = commits.TableWriter(catalog, "n.t")
    for seq in range(5):
        writer.append(commits.ProbeBatches().rows("w", seq, 10))
    ours = len(calls) / 5
    calls.clear()
    table = catalog.load_table("n.t")
    table.append(commits.ProbeBatches().rows("w", 99, 10))  # PyIceberg's own transaction, for comparison
    theirs = len(calls)
    assert ours <= 3 < 10 <= theirs, (ours, theirs)  # once per distinct staged state, against every read
    # What it wrote is what PyIceberg's own path writes: every batch once.
    assert catalog.load_table("n.t").scan().to_arrow().num_rows == 60
