"""The exporter's metrics: one family per signal, from what the last refresh and checks learned."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from lakehouse_platform.runtime import runs
from lakehouse_platform.runtime.exporter.config import ServiceWatch
from lakehouse_platform.runtime.exporter.state import Disks, Probe, TableState

TABLE_LABELS = ["catalog", "namespace", "table"]


def table_families(catalog: str, tables: list[TableState], last_runs: list[runs.Run], jobs: set[str],
                   now: float) -> Iterator[Metric]:
    """The per-table metric families (see the module docstring)."""
    def gauge(name: str, help_text: str, extra: tuple[str, ...] = ()) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"iceberg_table_{name}", help_text, labels=[*TABLE_LABELS, *extra])

    exists = gauge("exists", "1 when the table resolves in the catalog (0: a declared table is missing).")
    declared = gauge("declared", "1 when the table is declared in the stack (spec.tables).")
    error = gauge("scrape_error", "1 when the table could not be read at the last refresh.")
    promise = gauge("freshness_promise_seconds", "The table's freshness promise.", ("owner",))
    last_commit = gauge("last_data_commit_timestamp_seconds", "When the last commit that changed data happened "
                                                               "(maintenance replace commits excluded).")
    age = gauge("snapshot_age_seconds", "Seconds since the last commit that changed data (since creation if none).")
    snapshots = gauge("snapshots", "Snapshots in the table's metadata.")
    oldest = gauge("oldest_snapshot_age_seconds", "Age of the oldest snapshot still kept.")
    retention = gauge("snapshot_retention_seconds", "How long snapshots are meant to be kept (expire threshold).")
    data_files = gauge("data_files", "Live data files of the current snapshot.")
    delete_files = gauge("delete_files", "Live delete files (position and equality) of the current snapshot.")
    ratio = gauge("delete_file_ratio", "Delete files / (data files + delete files).")
    small = gauge("small_data_files", "Live data files smaller than the small-file size.")
    data_bytes = gauge("data_bytes", "Bytes of the live data files.")
    records = gauge("records", "Records in the live data files (before deletes are applied).")
    manifests = gauge("manifests", "Manifests of the current snapshot.")
    metadata_bytes = gauge("metadata_bytes", "Size of the current metadata.json: every commit rewrites it, every "
                                             "reader parses it.")
    load_seconds = gauge("load_seconds", "How long the exporter's last load of the table took (the catalog's "
                                         "answer and metadata.json parsed): the step of every scan's planning that "
                                         "grows with the table's history.")
    max_snapshots = gauge("max_snapshots", "The most snapshots the table may hold (its retention's max_snapshots).",
                          ("owner",))
    max_metadata = gauge("max_metadata_bytes", "The largest metadata.json the table may have (its retention's "
                                               "max_metadata_size).", ("owner",))
    for t in tables:
        labels = [catalog, t.namespace, t.name]
        exists.add_metric(labels, 1 if t.exists else 0)
        declared.add_metric(labels, 1 if t.declared else 0)
        promise.add_metric([*labels, t.owner], t.freshness_s)
        retention.add_metric(labels, t.retention_s)
        if t.max_snapshots:
            max_snapshots.add_metric([*labels, t.owner], t.max_snapshots)
        if t.max_metadata_bytes:
            max_metadata.add_metric([*labels, t.owner], t.max_metadata_bytes)
        if not t.exists:
            continue
        error.add_metric(labels, 1 if t.error else 0)
        reference = t.last_data_commit if t.last_data_commit is not None else t.created
        if t.last_data_commit is not None:
            last_commit.add_metric(labels, t.last_data_commit)
        if reference is not None:
            age.add_metric(labels, max(0.0, now - reference))
        snapshots.add_metric(labels, t.snapshots)
        if t.oldest_snapshot is not None:
            oldest.add_metric(labels, max(0.0, now - t.oldest_snapshot))
        files = t.files
        data_files.add_metric(labels, files.data_files)
        delete_files.add_metric(labels, files.delete_files)
        ratio.add_metric(labels, files.delete_files / (files.data_files + files.delete_files)
                         if files.data_files + files.delete_files else 0.0)
        small.add_metric(labels, files.small_data_files)
        data_bytes.add_metric(labels, files.data_bytes)
        records.add_metric(labels, files.records)
        manifests.add_metric(labels, t.manifests)
        if t.metadata_bytes is not None:
            metadata_bytes.add_metric(labels, t.metadata_bytes)
        if t.load_seconds is not None:
            load_seconds.add_metric(labels, t.load_seconds)
    yield from (exists, declared, error, promise, last_commit, age, snapshots, oldest, retention, data_files,
                delete_files, ratio, small, data_bytes, records, manifests, metadata_bytes, load_seconds,
                max_snapshots, max_metadata)

    known = {(t.namespace, t.name) for t in tables}
    # Not "job": Prometheus reserves it for the scrape job (an exported "job" becomes "exported_job").
    run_labels = [*TABLE_LABELS, "action"]
    success = GaugeMetricFamily("iceberg_maintenance_last_run_success", "1 when the last finished run of the "
                                                                        "maintenance action on the table succeeded.",
                                labels=run_labels)
    finished = GaugeMetricFamily("iceberg_maintenance_last_run_timestamp_seconds",
                                 "When the last maintenance run of the job on the table ended.", labels=run_labels)
    duration = GaugeMetricFamily("iceberg_maintenance_last_run_duration_seconds",
                                 "How long the last maintenance run of the job on the table took.", labels=run_labels)
    for run in last_runs:
        namespace, _, name = run.target.rpartition(".")
        if run.status == "running" or (jobs and run.job not in jobs) or (namespace, name) not in known:
            continue
        labels = [catalog, namespace, name, run.job]
        success.add_metric(labels, 1 if run.status == "ok" else 0)
        ended = run.ended_at or run.started_at
        finished.add_metric(labels, ended)
        duration.add_metric(labels, max(0.0, ended - run.started_at))
    yield from (success, finished, duration)


def operation_families(last_runs: list[runs.Run]) -> Iterator[Metric]:
    """The last run of every operation the run record holds (maintenance, backups), by job and target."""
    success = GaugeMetricFamily("lakehouse_operation_last_run_success", "1 when the last finished run succeeded.",
                                labels=["operation", "target"])
    finished = GaugeMetricFamily("lakehouse_operation_last_run_timestamp_seconds", "When the last finished run ended.",
                                 labels=["operation", "target"])
    for run in last_runs:
        if run.status == "running":
            continue
        success.add_metric([run.job, run.target], 1 if run.status == "ok" else 0)
        finished.add_metric([run.job, run.target], run.ended_at or run.started_at)
    yield from (success, finished)


SUPERVISOR_STATES = ("running", "backoff", "gave-up", "stopped", "starting", "failed-to-start")


def service_families(catalog: str, probe: Probe, services: list[ServiceWatch]) -> Iterator[Metric]:
    """Catalog and service signals from the last probe."""
    up = GaugeMetricFamily("lakehouse_catalog_up", "1 when the catalog answers /v1/config and a load-table round trip.",
                           labels=["catalog"])
    up.add_metric([catalog], 1 if probe.catalog_up else 0)
    yield up
    latency = GaugeMetricFamily("lakehouse_catalog_request_seconds", "How long the exporter's last catalog "
                                                                     "requests took.", labels=["catalog", "request"])
    if probe.config_seconds is not None:
        latency.add_metric([catalog, "config"], probe.config_seconds)
    if probe.load_seconds is not None:
        latency.add_metric([catalog, "load_table"], probe.load_seconds)
    yield latency
    service_up = GaugeMetricFamily("lakehouse_service_up", "1 when the service answers its health check.",
                                   labels=["service"])
    for name, healthy in sorted(probe.services.items()):
        service_up.add_metric([name], 1 if healthy else 0)
    yield service_up
    restarts = GaugeMetricFamily("lakehouse_service_restarts", "Restarts of the service by its watchdog since it was "
                                                               "(re)deployed.", labels=["service"])
    state = GaugeMetricFamily("lakehouse_service_state", "1 for the watchdog's state of the service "
                                                         "(gave-up: crash-looped past its restart limit).",
                              labels=["service", "state"])
    for service in services:
        status = probe.supervisors.get(service.name)
        if status is None:
            continue
        restarts.add_metric([service.name], float(status.get("restarts") or 0))
        current = str(status.get("state") or "unknown")
        for name in (*SUPERVISOR_STATES, *(() if current in SUPERVISOR_STATES else (current,))):
            state.add_metric([service.name, name], 1 if name == current else 0)
    yield restarts
    yield state


def disk_families(disks: Disks, services: list[ServiceWatch]) -> Iterator[Metric]:
    """Each service's state on disk against its budget, and what the database's replication slots hold back."""
    state = GaugeMetricFamily("lakehouse_service_state_bytes", "Bytes the service's state (its data dir) takes on "
                                                               "disk.", labels=["service"])
    for name, size in sorted(disks.state_bytes.items()):
        state.add_metric([name], size)
    yield state
    budget = GaugeMetricFamily("lakehouse_service_disk_budget_bytes", "The service's disk budget "
                                                                      "(services.<name>.disk).", labels=["service"])
    for service in services:
        if service.disk_budget_bytes:
            budget.add_metric([service.name], service.disk_budget_bytes)
    yield budget
    held = GaugeMetricFamily("lakehouse_replication_slot_retained_bytes", "WAL the database keeps for a replication "
                                                                          "slot (from its restart point on).",
                             labels=["slot"])
    active = GaugeMetricFamily("lakehouse_replication_slot_active", "1 when a consumer reads the slot.",
                               labels=["slot", "wal_status"])
    for slot, (size, reading, status) in sorted(disks.slots.items()):
        held.add_metric([slot], size)
        active.add_metric([slot, status], 1 if reading else 0)
    yield held
    yield active
