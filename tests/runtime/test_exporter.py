"""The metrics exporter against real Iceberg tables (PyIceberg's SQL catalog on a local SQLite file and a local
warehouse: offline), the run record, and what it serves."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest
from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest
from pyiceberg.manifest import ManifestFile
from pyiceberg.table.snapshots import Operation, Snapshot, Summary

from lakehouse_platform.runtime import exporter as ex
from lakehouse_platform.runtime import runs

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


@pytest.fixture
def warehouse(tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/warehouse"}
    # The SQL catalog keys tables by catalog name: the name the exporter loads its catalog with.
    catalog = SqlCatalog("exporter", **{k: v for k, v in props.items() if k != "type"})
    catalog.create_namespace("sales")
    return props, catalog, tmp_path


def make(config_props, tmp_path, **overrides) -> ex.Exporter:
    config = {"listen_port": 0, "catalog_name": "test", "catalog": config_props, "default_freshness_s": 3600,
              "default_retention_s": 7 * 86400, "small_file_bytes": 32 * 1024 * 1024, "workers": 2,
              "runs_db": str(runs.runs_db(tmp_path)), **overrides}
    return ex.Exporter(ex.ExporterConfig.model_validate(config))


def served(exporter: ex.Exporter) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    registry.register(exporter)  # type: ignore[arg-type]
    found = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(samples, name: str, table: str, **labels: str) -> float | None:
    for (found, found_labels), number in samples.items():
        labels_of = dict(found_labels)
        if found == name and labels_of.get("table") == table and all(labels_of.get(k) == v for k, v in labels.items()):
            return number
    return None


def test_table_signals_come_from_the_metadata(warehouse):
    props, catalog, tmp_path = warehouse
    table = catalog.create_table("sales.orders", schema=SCHEMA)
    for start in range(3):
        table.append(pa.table({"id": [start]}, schema=SCHEMA))
    committed = catalog.load_table("sales.orders").current_snapshot().timestamp_ms / 1000
    watcher = make(props, tmp_path, tables=[{"namespace": "sales", "name": "missing", "owner": "sales-eng",
                                              "freshness_s": 600, "retention_s": 86400}])
    watcher.refresh()
    samples = served(watcher)
    assert value(samples, "iceberg_table_data_files", "orders") == 3
    assert value(samples, "iceberg_table_small_data_files", "orders") == 3
    assert value(samples, "iceberg_table_delete_files", "orders") == 0
    assert value(samples, "iceberg_table_snapshots", "orders") == 3
    assert value(samples, "iceberg_table_manifests", "orders") == 3
    assert value(samples, "iceberg_table_records", "orders") == 3
    assert value(samples, "iceberg_table_last_data_commit_timestamp_seconds", "orders") == pytest.approx(committed)
    assert 0 <= value(samples, "iceberg_table_snapshot_age_seconds", "orders") < 60
    assert value(samples, "iceberg_table_freshness_promise_seconds", "orders", owner="") == 3600  # the default
    # A declared table that does not resolve is reported, with its owner's promise.
    assert value(samples, "iceberg_table_exists", "missing") == 0
    assert value(samples, "iceberg_table_freshness_promise_seconds", "missing", owner="sales-eng") == 600


def test_a_promise_written_on_the_table_applies_to_an_undeclared_table(warehouse):
    props, catalog, tmp_path = warehouse
    catalog.create_table("sales.fresh", schema=SCHEMA, properties={ex.FRESHNESS_PROPERTY: "2"})
    watcher = make(props, tmp_path)
    watcher.refresh()
    samples = served(watcher)
    assert value(samples, "iceberg_table_freshness_promise_seconds", "fresh") == 120
    assert value(samples, "iceberg_table_snapshot_age_seconds", "fresh") is not None  # never written: since creation


def test_manifests_are_read_once_and_an_unchanged_table_costs_no_storage_read(warehouse, monkeypatch):
    props, catalog, tmp_path = warehouse
    table = catalog.create_table("sales.orders", schema=SCHEMA)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    reads: list[str] = []
    lists: list[int] = []
    original, original_list = ManifestFile.fetch_manifest_entry, Snapshot.manifests

    def counted(self, io, discard_deleted=True):
        reads.append(self.manifest_path)
        return original(self, io, discard_deleted=discard_deleted)

    def counted_list(self, io):
        lists.append(self.snapshot_id)
        return original_list(self, io)

    monkeypatch.setattr(ManifestFile, "fetch_manifest_entry", counted)
    monkeypatch.setattr(Snapshot, "manifests", counted_list)
    watcher = make(props, tmp_path)
    watcher.refresh()
    assert (len(lists), len(reads)) == (1, 1)
    watcher.refresh()
    assert (len(lists), len(reads)) == (1, 1), "the current snapshot did not change: nothing is read from storage"
    catalog.load_table("sales.orders").append(pa.table({"id": [2]}, schema=SCHEMA))
    before = (len(lists), len(reads))  # the writer's own append reads its parent's manifests too
    watcher.refresh()
    assert (len(lists) - before[0], len(reads) - before[1]) == (1, 1), (
        "the new manifest list and its one new manifest; the old manifest is cached by path")
    assert value(served(watcher), "iceberg_table_data_files", "orders") == 2


def test_freshness_ignores_replace_commits():
    def snap(snapshot_id: int, at_ms: int, operation: Operation) -> Snapshot:
        return Snapshot(snapshot_id=snapshot_id, timestamp_ms=at_ms, manifest_list="m", summary=Summary(operation))

    history = [snap(1, 1_000, Operation.APPEND), snap(2, 5_000, Operation.OVERWRITE), snap(3, 9_000, Operation.REPLACE)]
    assert ex.last_data_commit(history) == 5.0
    assert ex.last_data_commit([snap(3, 9_000, Operation.REPLACE)]) is None


def test_maintenance_runs_and_watchdog_states_are_reported(warehouse, tmp_path):
    props, catalog, _ = warehouse
    catalog.create_table("sales.orders", schema=SCHEMA)
    record = runs.runs_db(tmp_path)
    failed = runs.start(record, runs.Run(job="expire_snapshots", target="sales.orders", trigger="on-demand"))
    runs.finish(record, failed, "failed", error="retention too short")
    ok = runs.start(record, runs.Run(job="rewrite_data_files", target="sales.orders"))
    runs.finish(record, ok, "ok")
    backup = runs.start(record, runs.Run(job="backup-catalog", target="rest-fixture"))
    runs.finish(record, backup, "ok")
    service_dir = tmp_path / "trino"
    service_dir.mkdir()
    (service_dir / ".watchdog.json").write_text('{"state": "gave-up", "restarts": 5}')
    watcher = make(props, tmp_path, services=[{"name": "trino", "data_dir": str(service_dir)}])
    watcher.refresh()
    watcher.probe_once()
    samples = served(watcher)
    assert value(samples, "iceberg_maintenance_last_run_success", "orders", action="expire_snapshots") == 0
    assert value(samples, "iceberg_maintenance_last_run_success", "orders", action="rewrite_data_files") == 1
    assert samples[("lakehouse_operation_last_run_success", (("operation", "backup-catalog"),
                                                             ("target", "rest-fixture")))] == 1
    assert samples[("lakehouse_service_state", (("service", "trino"), ("state", "gave-up")))] == 1
    assert samples[("lakehouse_service_restarts", (("service", "trino"),))] == 5
    # The catalog here is no REST catalog: the probe says it is not up, rather than guessing.
    assert samples[("lakehouse_catalog_up", (("catalog", "test"),))] == 0


def test_a_scrape_reads_the_last_refresh_and_never_the_catalog(warehouse, monkeypatch):
    props, catalog, tmp_path = warehouse
    catalog.create_table("sales.orders", schema=SCHEMA)
    watcher = make(props, tmp_path)
    watcher.refresh()
    monkeypatch.setattr(watcher, "catalog", lambda: (_ for _ in ()).throw(AssertionError("scrape touched the catalog")))
    started = time.perf_counter()
    samples = served(watcher)
    assert time.perf_counter() - started < 1.0
    assert value(samples, "iceberg_table_snapshots", "orders") == 0


def test_catalog_credentials_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CATALOG_TOKEN", "t0k3n")
    assert ex.expand_env({"token": "${ENV:CATALOG_TOKEN}", "uri": "http://x"}) == {"token": "t0k3n", "uri": "http://x"}
    monkeypatch.delenv("CATALOG_TOKEN")
    with pytest.raises(KeyError, match="CATALOG_TOKEN"):
        ex.expand_env({"token": "${ENV:CATALOG_TOKEN}"})


def test_a_hung_service_never_delays_the_catalog_signal(tmp_path):
    """The catalog is probed on a thread of its own: a service whose health check hangs for its whole timeout
    (here 20 s) does not hold back ``lakehouse_catalog_up`` (it did: one probe checked the catalog, then every
    service, and published once at the end, so a hung catalog reached Prometheus a timeout late)."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Catalog(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"{}"
            self.send_response(200 if self.path in ("/v1/config", "/v1/namespaces") else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args) -> None:
            pass

    catalog = ThreadingHTTPServer(("127.0.0.1", 0), Catalog)
    threading.Thread(target=catalog.serve_forever, daemon=True).start()
    hung = socket.socket()  # listens, never accepts: a connect succeeds and the request waits for its timeout
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)
    watcher = make({"uri": f"http://127.0.0.1:{catalog.server_port}"}, tmp_path, discover=False,
                   probe_interval_s=0.2, request_timeout_s=20,
                   services=[{"name": "stuck", "health": {"kind": "http",
                                                          "url": f"http://127.0.0.1:{hung.getsockname()[1]}/"}}])
    watcher.start()
    try:
        deadline, up = time.monotonic() + 10, None
        while time.monotonic() < deadline and up != 1:
            up = served(watcher).get(("lakehouse_catalog_up", (("catalog", "test"),)))
            time.sleep(0.1)
        assert up == 1, "the catalog's signal waited for the hung service's health check"
        assert "stuck" not in watcher.probe.services  # its check is still waiting
    finally:
        watcher.stopping.set()
        catalog.shutdown()
        hung.close()


def test_the_catalog_down_bound_is_the_sum_of_every_wait():
    """Probe interval, the probe's timeout (a hung catalog answers nothing), a scrape, an evaluation, and the
    rule's ``for`` in whole evaluation intervals (Prometheus fires at the first evaluation past it)."""
    from lakehouse_platform.model import ObservabilitySpec

    default = ObservabilitySpec()
    assert default.catalog_down_terms_s == {"probe_interval_s": 5, "probe_timeout_s": 5, "scrape_interval_s": 5,
                                            "evaluation_interval_s": 5, "catalog_down_for_s": 10}
    assert default.catalog_down_bound_s == 30
    assert ObservabilitySpec(catalog_down_for_s=12, probe_timeout_s=2).catalog_down_bound_s == 5 + 2 + 5 + 5 + 15


def test_growth_is_seen_by_count_size_and_load_time_against_each_tables_bounds(warehouse):
    props, catalog, tmp_path = warehouse
    table = catalog.create_table("sales.orders", schema=SCHEMA)
    for start in range(4):
        table.append(pa.table({"id": [start]}, schema=SCHEMA))
    catalog.create_table("sales.other", schema=SCHEMA, properties={"owner": "other-team"})
    watcher = make(props, tmp_path, default_max_snapshots=500, default_max_metadata_bytes=2048,
                   tables=[{"namespace": "sales", "name": "orders", "owner": "sales-eng", "declared": False,
                            "freshness_s": 600, "retention_s": 3600, "max_snapshots": 3,
                            "max_metadata_bytes": 1_000_000}])
    watcher.refresh()
    samples = served(watcher)
    location = catalog.load_table("sales.orders").metadata_location
    assert value(samples, "iceberg_table_metadata_bytes", "orders") == Path(location.removeprefix("file://")).stat(
    ).st_size
    assert value(samples, "iceberg_table_snapshots", "orders") == 4
    # The bounds its retention declares, with the owner each alert names; a table of a stream is not declared.
    assert value(samples, "iceberg_table_max_snapshots", "orders", owner="sales-eng") == 3
    assert value(samples, "iceberg_table_max_metadata_bytes", "orders", owner="sales-eng") == 1_000_000
    assert value(samples, "iceberg_table_declared", "orders") == 0
    # Any other table: the defaults, and the owner its own property names.
    assert value(samples, "iceberg_table_max_snapshots", "other", owner="other-team") == 500
    assert value(samples, "iceberg_table_max_metadata_bytes", "other", owner="other-team") == 2048
    assert 0 < value(samples, "iceberg_table_load_seconds", "orders") < 10


def test_a_services_state_on_disk_and_its_log_are_measured_against_its_budget(tmp_path):
    data, logs = tmp_path / "svc", tmp_path / "logs"
    (data / "sub").mkdir(parents=True)
    logs.mkdir()
    (data / "sub" / "a.bin").write_bytes(b"x" * 300_000)
    (data / "b.bin").write_bytes(b"y" * 100_000)
    os.link(data / "b.bin", data / "sub" / "b-again.bin")  # one file, twice: counted once
    (data / "to-cache").symlink_to(tmp_path.parent)  # a link out of the tree: not followed
    (logs / "svc.log").write_bytes(b"l" * 50_000)
    (logs / "svc.log.1").write_bytes(b"l" * 70_000)
    (logs / "other.log").write_bytes(b"o" * 90_000)
    du = subprocess.run(["du", "-s", "--block-size=1", str(data)], capture_output=True, text=True, check=True)
    assert ex.disk_usage(str(data)) == int(du.stdout.split()[0])  # what du says
    logged = ex.log_usage(str(logs / "svc.log"))
    assert 120_000 <= logged < 200_000  # the log and its rotated copy, not another service's
    watcher = make({"uri": "http://127.0.0.1:9"}, tmp_path, services=[
        {"name": "svc", "data_dir": str(data), "log_file": str(logs / "svc.log"), "disk_budget_bytes": 10**9}])
    watcher.measure_disks()
    samples = served(watcher)
    state = dict(samples)[("lakehouse_service_state_bytes", (("service", "svc"),))]
    assert state == int(du.stdout.split()[0]) + logged
    assert dict(samples)[("lakehouse_service_disk_budget_bytes", (("service", "svc"),))] == 10**9
    # The database's slots as last read (the exporter reads them with psycopg: the probes check it live).
    watcher.disks = ex.Disks(state_bytes={}, slots={"bookshop_debezium": (5_000_000, False, "extended")})
    samples = dict(served(watcher))
    assert samples[("lakehouse_replication_slot_retained_bytes", (("slot", "bookshop_debezium"),))] == 5_000_000
    assert samples[("lakehouse_replication_slot_active", (("slot", "bookshop_debezium"),
                                                          ("wal_status", "extended")))] == 0
