"""The alert rules, declared from the stack's spec: one Prometheus rules file for every target (observability).

Native and docker load it into their own Prometheus; aws loads the same text into Amazon Managed
Service for Prometheus (a rule groups namespace). Each alert carries the layer whose promise it is
about and that layer's owner (a table's own owner rides along on table alerts), so whoever receives it
knows whose it is. Thresholds come from ``spec.observability`` and the tables' declarations; the
expressions read the exporter's metrics (``lakehouse_platform.runtime.exporter``).
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from lakehouse_platform.model import Layer, PlatformSpec, parse_size

TABLE = "catalog, namespace, table"


def owned(expr: str) -> str:
    """A table alert's expression with the table's owner joined in (from its freshness promise, which the exporter
    serves for every table it watches, with the owner); where none is known the alert still fires, without it."""
    return (f"(({expr}) * on({TABLE}) group_left(owner) (iceberg_table_freshness_promise_seconds * 0 + 1))"
            f" or on({TABLE}) ({expr})")


@dataclass(frozen=True)
class Alert:
    """One alert rule."""

    name: str
    expr: str
    for_s: int
    layer: Layer
    severity: str
    summary: str

    def rule(self, spec: PlatformSpec) -> dict[str, object]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": f"{self.for_s}s",
            "labels": {"severity": self.severity, "layer": self.layer.value,
                       "layer_owner": spec.layers[self.layer].owner},
            "annotations": {"summary": self.summary, "down_means": spec.layers[self.layer].down_means},
        }


def alerts(spec: PlatformSpec) -> list[Alert]:
    """Every alert of the stack, from its spec."""
    obs = spec.observability
    return [
        Alert("CatalogDown", "lakehouse_catalog_up == 0", obs.catalog_down_for_s, Layer.CATALOG, "critical",
              "catalog {{ $labels.catalog }} does not answer /v1/config and a load-table round trip"),
        Alert("TableStale",
              f"iceberg_table_snapshot_age_seconds > on({TABLE}) group_left(owner) "
              "iceberg_table_freshness_promise_seconds",
              obs.table_stale_for_s, Layer.ORCHESTRATION, "warning",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}): last data commit "
              "{{ $value | humanizeDuration }} ago, past its freshness promise"),
        Alert("SnapshotsGrowingWithoutExpiry",
              owned(f"(iceberg_table_oldest_snapshot_age_seconds > on({TABLE}) 2 * "
                    f"iceberg_table_snapshot_retention_seconds) and on({TABLE}) (iceberg_table_snapshots > 1)"),
              300, Layer.ORCHESTRATION, "warning",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}) keeps snapshots older than "
              "twice its retention: expiry is not running"),
        Alert("SnapshotCountHigh",
              f"iceberg_table_snapshots > on({TABLE}) group_left(owner) iceberg_table_max_snapshots",
              obs.refresh_interval_s, Layer.ORCHESTRATION, "warning",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}) holds {{ $value }} snapshots, "
              "more than its retention's max_snapshots: expiry does not keep up with its commits (every commit "
              "rewrites, every reader parses them all)"),
        Alert("MetadataTooLarge",
              f"iceberg_table_metadata_bytes > on({TABLE}) group_left(owner) iceberg_table_max_metadata_bytes",
              obs.refresh_interval_s, Layer.ORCHESTRATION, "warning",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}): metadata.json is "
              "{{ $value | humanize1024 }}B, past its retention's max_metadata_size: commits and planning slow "
              "down with it"),
        Alert("ManifestsPiling", owned(f"iceberg_table_manifests > {obs.manifests_alert}"), 600,
              Layer.ORCHESTRATION, "info",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}): {{ $value }} manifests in "
              "its current snapshot, each read by every scan's planning: rewrite_manifests is not keeping up"),
        Alert("MaintenanceFailed", owned("iceberg_maintenance_last_run_success == 0"), 0, Layer.ORCHESTRATION,
              "warning", "{{ $labels.action }} on {{ $labels.namespace }}.{{ $labels.table }} (owner "
                         "{{ $labels.owner }}) failed at its last run"),
        Alert("TableHasManySmallFiles", owned(f"iceberg_table_small_data_files > {obs.small_files_alert}"), 600,
              Layer.ORCHESTRATION, "info",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}) has {{ $value }} data files "
              "smaller than "
              f"{obs.small_file_size}: compaction is not keeping up"),
        Alert("DeleteFilesPiling",
              owned(f"iceberg_table_delete_file_ratio > {obs.delete_file_ratio_alert} and on({TABLE}) "
                    "(iceberg_table_delete_files > 10)"), 600, Layer.ORCHESTRATION, "info",
              "{{ $labels.namespace }}.{{ $labels.table }} (owner {{ $labels.owner }}): delete files are "
              "{{ $value | humanizePercentage }} "
              "of its files: reads merge them on every scan"),
        Alert("DeclaredTableMissing", "iceberg_table_exists == 0", 300, Layer.CATALOG, "warning",
              "declared table {{ $labels.namespace }}.{{ $labels.table }} does not resolve in the catalog"),
        Alert("ServiceDown", "lakehouse_service_up == 0", 60, Layer.OBSERVABILITY, "critical",
              "{{ $labels.service }} does not answer its health check"),
        Alert("ServiceDiskOverBudget",
              "lakehouse_service_state_bytes > on(service) lakehouse_service_disk_budget_bytes", 300,
              Layer.OBSERVABILITY, "critical",
              "{{ $labels.service }}'s state takes {{ $value | humanize1024 }}B on disk, past its disk budget"),
        Alert("ServiceDiskFilling",
              f"predict_linear(lakehouse_service_state_bytes[{obs.disk_forecast_window_hours}h], "
              f"{obs.disk_forecast_days * 86400}) > on(service) lakehouse_service_disk_budget_bytes",
              obs.disk_forecast_for_s, Layer.OBSERVABILITY, "warning",
              f"{{{{ $labels.service }}}}'s state, growing as over the last {obs.disk_forecast_window_hours} hours, "
              f"passes its disk budget within {obs.disk_forecast_days} days"),
        Alert("ReplicationSlotLagging",
              f"lakehouse_replication_slot_retained_bytes > {parse_size(spec.streams.slot_lag_alert)}", 60,
              Layer.CATALOG, "warning",
              "replication slot {{ $labels.slot }} holds {{ $value | humanize1024 }}B of WAL: its reader (Debezium) "
              "fell behind or stopped; past streams.slot_max_wal_keep_size the database drops what it holds and "
              "the connector snapshots again"),
        Alert("ServiceCrashLooping",
              'lakehouse_service_state{state="gave-up"} == 1 or increase(lakehouse_service_restarts[10m]) >= 3',
              0, Layer.OBSERVABILITY, "critical",
              "{{ $labels.service }} keeps crashing (its watchdog restarted it repeatedly or gave up)"),
        Alert("ExporterDown", 'up{job="lakehouse-exporter"} == 0', 60, Layer.OBSERVABILITY, "critical",
              "the metrics exporter does not answer: no table or service signal is current"),
    ]


def rules_yaml(spec: PlatformSpec) -> str:
    """The Prometheus rules file of the stack (one group, evaluated at the scrape interval)."""
    group = {"name": "lakehouse", "interval": f"{spec.observability.scrape_interval_s}s",
             "rules": [alert.rule(spec) for alert in alerts(spec)]}
    header = "# Generated from the stack's spec by lakehouse_platform.services.prometheus.alerts; do not edit.\n"
    return header + yaml.safe_dump({"groups": [group]}, sort_keys=False, width=200)
