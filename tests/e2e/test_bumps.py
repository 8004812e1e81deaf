"""Version bumps in place, for real on native: one stack deployed at the versions before the pins, each pin then
moved to this release's, one ``pulumi up`` each, the data kept.

For each bump the preview must say update (never replace, create or delete), the service comes back healthy on the
new build (``native.obtained_versions``), its downtime is printed, and the data written before is all there. The
Flink bump goes through stop-with-savepoint (the managers' ``pre_stop`` drain) and a restore from that savepoint,
with no row written twice. Last, a change the data cannot survive is refused by ``pulumi preview`` with its
procedure and nothing is touched (a lineage whose state belongs to another job graph).

Bumps carried (the versions the registries serve before each pin): the Iceberg REST fixture 1.10.0 -> 1.10.1
(Maven Central), Trino 470 -> 476 (the two newest trino-server tarballs on Maven Central), Flink 2.1.2 -> 2.1.3
(PyPI apache-flink-libraries). Heavy: ``make test`` runs it (marker e2e) under the heavy lock.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from infra.control import clients, isolated
from infra.control.workspace import StackCommandFailed, down, forget, outputs, run, select, up
from infra.paths import PROJECT_ROOT
from infra.services.flink.config import lineage
from infra.services.flink.job import GRAPH_MARKER
from infra.services.flink.native import native_state_dir
from tests.support import downtime

STACK = "bumps"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (PROJECT_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]

#: (service, the key under services.<service>, the version before, this release's), in the order they are moved.
BUMPS = [
    ("rest-fixture", "version", "1.10.0", "1.10.1"),
    ("trino", "native_version", "470", "476"),
    ("flink-jobmanager", "version", "2.1.2", "2.1.3"),
]
SCHEMA = pa.schema([pa.field("n", pa.int64(), nullable=False)])


def _stack_file() -> dict[str, Any]:
    return yaml.safe_load((PROJECT_ROOT / f"Pulumi.{STACK}.yaml").read_text())


def _set_pin(service: str, key: str, value: str) -> None:
    document = _stack_file()
    services = document["config"]["lakehouse:platform"].setdefault("services", {})
    services.setdefault(service, {})[key] = value
    if service == "flink-jobmanager":  # the cluster is one version: its task manager and job follow
        for member in ("flink-taskmanager", "flink-orders-job"):
            services.setdefault(member, {})[key] = value
    (PROJECT_ROOT / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))


@pytest.fixture(scope="module")
def deployed() -> Iterator[dict[str, Any]]:
    isolated.isolated_stack(STACK)
    for service, key, before, _ in BUMPS:
        _set_pin(service, key, before)
    try:
        from infra.control.artifacts import fetch

        assert fetch(STACK, None) == 0  # the versions before the pins, through the artifact recipes (checksums)
        seconds = up(STACK, quiet=True)
        print(f"\n== stack {STACK} up at {[(s, b) for s, _, b, _ in BUMPS]} in {seconds:.1f} s")
        yield outputs(STACK)
    finally:
        try:
            down(STACK, quiet=True)
        finally:
            forget(STACK)
            isolated.remove_stack_file(STACK)


def _rows(out: dict[str, Any], table: str) -> tuple[int, int]:
    loaded = clients.pyiceberg_catalog(out, name="bumps").load_table(table)
    return loaded.scan().to_arrow().num_rows, len(loaded.snapshots())


def _flink_ids(out: dict[str, Any]) -> tuple[int, int]:
    job = out["profiles"]["host"]["flink"]["job"]
    table = clients.pyiceberg_catalog(out, name="bumps-flink").load_table(job["table"])
    ids = table.scan(selected_fields=("order_id",)).to_arrow().column("order_id").to_pylist()
    return len(ids), len(set(ids))


def test_each_pin_moves_in_place_with_the_data_kept(deployed: dict[str, Any]) -> None:
    catalog = clients.pyiceberg_catalog(deployed, name="bumps-setup")
    namespace = f"bumps_{uuid.uuid4().hex[:6]}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.kept", schema=SCHEMA)
    for start in range(0, 30, 10):
        table.append(pa.table({"n": list(range(start, start + 10))}, schema=SCHEMA))
    kept = _rows(deployed, f"{namespace}.kept")
    for service, key, before, after in BUMPS:
        _set_pin(service, key, after)
        preview = select(STACK).preview(diff=True, color="never")
        assert not {"replace", "create", "delete", "create-replacement", "delete-replaced"} & set(
            preview.change_summary), (service, preview.change_summary)
        assert preview.change_summary.get("update", 0) >= 1, (service, preview.change_summary)
        resources = select(STACK).export_stack().deployment["resources"]
        checks = downtime.service_checks(resources)
        poller = downtime.DowntimePoller({service: checks[service]}).start()
        try:
            seconds = up(STACK, quiet=True)
        finally:
            poller.stop()
        out = outputs(STACK)
        print("\n" + poller.report(f"{service} {before} -> {after} (pulumi up {seconds:.1f} s)"))
        assert out["native"]["obtained_versions"][service] == after
        assert not poller.outages[service].still_down
        assert _rows(out, f"{namespace}.kept") == kept, service
        if service == "flink-jobmanager":
            job = out["jobs"]["flink-orders-job"]
            assert job["state"] == "RUNNING" and "/savepoints/" in job["restored_from"], job
            rows, distinct = _flink_ids(out)
            print(f"== Flink {before} -> {after}: restored from {job['restored_from']}; {rows} rows, "
                  f"{distinct} distinct order ids")
            assert rows == distinct


def test_a_job_graph_the_lineage_cannot_restore_is_refused_in_preview(deployed: dict[str, Any]) -> None:
    """The lineage's marker says another graph's state is there: preview stops with the procedure, nothing moves."""
    from infra.config import load_stack

    spec = load_stack(STACK)
    marker = native_state_dir(Path(outputs(STACK)["native"]["state_dir"])) / "savepoints" / lineage(spec) / GRAPH_MARKER
    recorded = json.loads(marker.read_text())
    pids = {name: info["pid"] for name, info in outputs(STACK)["native"]["services"].items()}
    marker.write_text(json.dumps({**recorded, "state_version": recorded["state_version"] + 1}))
    try:
        with pytest.raises(StackCommandFailed) as refused:
            run(STACK, "preview", quiet=True)
        assert "cannot be made in place is refused; nothing was changed" in str(refused.value)
        assert "flink.job.restore: none" in str(refused.value)
        time.sleep(1)
        assert {name: info["pid"] for name, info in outputs(STACK)["native"]["services"].items()} == pids
    finally:
        marker.write_text(json.dumps(recorded))
