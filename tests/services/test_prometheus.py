"""The alert rules the spec declares, checked by Prometheus' own promtool: valid, and firing when (and only when) they
should, on synthetic series. Skipped where promtool is not installed (the native artifacts install it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lakehouse_platform.config import load_platform
from lakehouse_platform.services.context import Side
from lakehouse_platform.services.exporter import definition as exporter
from lakehouse_platform.services.prometheus import config as prometheus
from lakehouse_platform.services.prometheus.alerts import alerts, rules_yaml
from tests.support.aws_graph import policy
from tests.support.rendered import uploads
from tests.support.stacks import stack_platform

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian's prometheus package)")
TABLE = 'catalog="rest-fixture",namespace="sales",table="orders"'


def spec():
    return load_platform(stack_platform("native"))


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_every_alert_names_its_layer_and_owner():
    found = yaml.safe_load(rules_yaml(spec()))["groups"][0]
    assert found["interval"] == "5s"
    names = [rule["alert"] for rule in found["rules"]]
    assert {"CatalogDown", "TableStale", "SnapshotsGrowingWithoutExpiry", "MaintenanceFailed"} <= set(names)
    for rule in found["rules"]:
        layer = _layer(rule["labels"]["layer"])
        assert rule["labels"]["layer_owner"] == spec().layers[layer].owner, rule
        assert rule["annotations"]["down_means"] == spec().layers[layer].down_means


@needs_promtool
def test_rules_and_scrape_config_pass_promtool(tmp_path):
    platform = spec()
    (tmp_path / "rules.yml").write_text(rules_yaml(platform))
    (tmp_path / "prometheus.yml").write_text(prometheus.scrape_config(platform, Side.INTERNAL, "rules.yml"))
    checked = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts(platform))} rules found" in checked.stdout + checked.stderr


@needs_promtool
def test_alerts_fire_when_they_should_and_not_before(tmp_path):
    platform = spec()
    obs = platform.observability
    (tmp_path / "rules.yml").write_text(rules_yaml(platform))
    stale_for = obs.table_stale_for_s
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "5s", "tests": [{
        "interval": "5s",
        "input_series": [
            # The catalog answers for 10 s, then not.
            {"series": 'lakehouse_catalog_up{catalog="rest-fixture"}', "values": "1 1 0x20"},
            # 50 s old and ageing; its promise is 60 s: past it from 15 s on.
            {"series": f"iceberg_table_snapshot_age_seconds{{{TABLE}}}", "values": "50+5x30"},
            {"series": f'iceberg_table_freshness_promise_seconds{{{TABLE},owner="sales-eng"}}', "values": "60x30"},
            {"series": f'iceberg_maintenance_last_run_success{{{TABLE},action="expire_snapshots"}}',
             "values": "1 0x20"},
            {"series": 'lakehouse_service_state{service="trino",state="gave-up"}', "values": "0 0 1x20"},
            {"series": 'lakehouse_service_restarts{service="trino"}', "values": "0x20"},
        ],
        "alert_rule_test": [
            {"eval_time": f"{10 + obs.catalog_down_for_s - 5}s", "alertname": "CatalogDown", "exp_alerts": []},
            {"eval_time": f"{10 + obs.catalog_down_for_s}s", "alertname": "CatalogDown", "exp_alerts": [
                {"exp_labels": {"severity": "critical", "layer": "catalog", "layer_owner": "platform",
                                "catalog": "rest-fixture"},
                 "exp_annotations": {"summary": "catalog rest-fixture does not answer /v1/config and a load-table "
                                                "round trip",
                                     "down_means": platform.layers[_layer("catalog")].down_means}}]},
            {"eval_time": f"{15 + stale_for - 5}s", "alertname": "TableStale", "exp_alerts": []},
            {"eval_time": f"{15 + stale_for}s", "alertname": "TableStale", "exp_alerts": [
                {"exp_labels": {"severity": "warning", "layer": "orchestration",
                                "layer_owner": platform.layers[_layer("orchestration")].owner, "catalog": "rest-fixture",
                                "namespace": "sales", "table": "orders", "owner": "sales-eng"},
                 "exp_annotations": {"summary": f"sales.orders (owner sales-eng): last data commit "
                                                f"{_human(50 + (15 + stale_for) // 5 * 5)} ago, past its freshness promise",
                                     "down_means": platform.layers[_layer("orchestration")].down_means}}]},
            {"eval_time": "5s", "alertname": "MaintenanceFailed", "exp_alerts": [
                {"exp_labels": {"severity": "warning", "layer": "orchestration",
                                "layer_owner": platform.layers[_layer("orchestration")].owner, "catalog": "rest-fixture",
                                "namespace": "sales", "table": "orders", "action": "expire_snapshots",
                                "owner": "sales-eng"},
                 "exp_annotations": {"summary": "expire_snapshots on sales.orders (owner sales-eng) failed at its "
                                                "last run",
                                     "down_means": platform.layers[_layer("orchestration")].down_means}}]},
            {"eval_time": "0s", "alertname": "MaintenanceFailed", "exp_alerts": []},
            {"eval_time": "10s", "alertname": "ServiceCrashLooping", "exp_alerts": [
                {"exp_labels": {"severity": "critical", "layer": "observability", "layer_owner": "platform",
                                "service": "trino", "state": "gave-up"},
                 "exp_annotations": {"summary": "trino keeps crashing (its watchdog restarted it repeatedly or gave up)",
                                     "down_means": platform.layers[_layer("observability")].down_means}}]},
        ],
    }]}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False))
    done = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "SUCCESS" in output, output


def _human(seconds: int) -> str:
    """Prometheus' humanizeDuration for whole seconds under an hour."""
    minutes, rest = divmod(seconds, 60)
    return f"{minutes}m {rest}s" if minutes else f"{rest}s"


def _layer(name: str):
    from lakehouse_platform.model import Layer

    return Layer(name)



# -- the rules and scrape config on docker and aws, under Pulumi mocks ---------------------------------------


def test_lab_prometheus_loads_the_rules_the_spec_declares_and_scrapes_the_exporter(lab):
    spec = load_platform(stack_platform("lab"))
    files = uploads(lab, "prometheus")
    assert files["/etc/prometheus/rules.yml"] == rules_yaml(spec)
    scrape = yaml.safe_load(files["/etc/prometheus/prometheus.yml"])
    targets = {job["job_name"]: job["static_configs"][0]["targets"] for job in scrape["scrape_configs"]}
    assert targets["lakehouse-exporter"] == ["lakehouse-exporter:9464"]
    assert targets["catalog-gate"] == ["catalog-gate:8182"]
    assert lab.named("prometheus").inputs["image"] == "sha256:prometheus-image"  # pulled: prom/prometheus pinned
    assert lab.named("prometheus-image").inputs["name"] == "prom/prometheus:v2.55.1"


def test_cloud_signals_live_in_managed_prometheus_with_the_same_rules(cloud):
    from tests.support.stacks import cloud_platform

    spec = load_platform(cloud_platform())
    rules = cloud.named("lakehouse-alert-rules")
    assert rules.inputs["data"] == rules_yaml(spec)
    workspace = cloud.named("lakehouse-signals")
    assert workspace.inputs["kmsKeyArn"].endswith("lakehouse-key")
    alertmanager = yaml.safe_load(yaml.safe_load(cloud.named("lakehouse-alertmanager").inputs["definition"])
                                  ["alertmanager_config"])
    assert alertmanager["receivers"][0]["sns_configs"][0]["topic_arn"].endswith(":lakehouse-alarms")
    topic = {s["Sid"]: s for s in policy(cloud, "lakehouse-alarms-publishers")["Statement"]}
    assert topic["ManagedPrometheusAlertManager"]["Principal"] == {"Service": "aps.amazonaws.com"}
    alarm = cloud.named("lakehouse-exporter-down").inputs
    assert alarm["dimensions"]["ServiceName"] == exporter.NAME and alarm["alarmActions"][0].endswith(":lakehouse-alarms")


if __name__ == "__main__":  # pragma: no cover - print the rules for a look
    sys.stdout.write(rules_yaml(spec()))


@needs_promtool
def test_growth_alerts_fire_by_count_size_disk_and_slot_each_naming_its_owner(tmp_path):
    platform = spec()
    obs = platform.observability
    (tmp_path / "rules.yml").write_text(rules_yaml(platform))
    layer = {name: platform.layers[_layer(name)] for name in ("orchestration", "observability", "catalog")}
    owner = f'{TABLE},owner="sales-eng"'

    def fired(alert: str, layer_name: str, severity: str, summary: str, **labels: str) -> dict:
        return {"exp_labels": {"severity": severity, "layer": layer_name, "layer_owner": layer[layer_name].owner,
                               **labels},
                "exp_annotations": {"summary": summary, "down_means": layer[layer_name].down_means}}

    table = {"catalog": "rest-fixture", "namespace": "sales", "table": "orders", "owner": "sales-eng"}
    manifests_for = 600
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "5s", "tests": [{
        "interval": "5s",
        "input_series": [
            # 480 snapshots growing by 10 a scrape past its bound of 500 (after 15 s); metadata.json 1.2 MiB against
            # 1 MiB from the start; manifests over the threshold from the start.
            {"series": f"iceberg_table_snapshots{{{TABLE}}}", "values": "480+10x200"},
            {"series": f"iceberg_table_max_snapshots{{{owner}}}", "values": "500x200"},
            {"series": f"iceberg_table_freshness_promise_seconds{{{owner}}}", "values": "3600x200"},
            # A table whose owner nobody knows: its alert fires all the same, without one.
            {"series": 'iceberg_table_manifests{catalog="rest-fixture",namespace="sales",table="lost"}',
             "values": f"{obs.manifests_alert + 5}x200"},
            {"series": f"iceberg_table_metadata_bytes{{{TABLE}}}", "values": "1258291x200"},
            {"series": f"iceberg_table_max_metadata_bytes{{{owner}}}", "values": "1048576x200"},
            {"series": f"iceberg_table_manifests{{{TABLE}}}", "values": f"{obs.manifests_alert + 1}x200"},
            # One service over its budget; one under it, growing 1 MB every 5 s (720 MB an hour: its 5 GB budget
            # within the forecast); one flat. 8 hours of it: the forecast's window and its hold.
            {"series": 'lakehouse_service_state_bytes{service="kafka"}', "values": "2000000000x6000"},
            {"series": 'lakehouse_service_disk_budget_bytes{service="kafka"}', "values": "1000000000x6000"},
            {"series": 'lakehouse_service_state_bytes{service="postgres"}', "values": "100000000+1000000x6000"},
            {"series": 'lakehouse_service_disk_budget_bytes{service="postgres"}', "values": "5000000000x6000"},
            {"series": 'lakehouse_service_state_bytes{service="trino"}', "values": "100000000x6000"},
            {"series": 'lakehouse_service_disk_budget_bytes{service="trino"}', "values": "5000000000x6000"},
            # Debezium's slot holds 300 MiB from 10 s on.
            {"series": 'lakehouse_replication_slot_retained_bytes{slot="bookshop_debezium"}',
             "values": "0 0 314572800x100"},
        ],
        "alert_rule_test": [
            {"eval_time": "10s", "alertname": "SnapshotCountHigh", "exp_alerts": []},
            {"eval_time": f"{15 + obs.refresh_interval_s}s", "alertname": "SnapshotCountHigh", "exp_alerts": [
                fired("SnapshotCountHigh", "orchestration", "warning",
                      f"sales.orders (owner sales-eng) holds {480 + 10 * (3 + obs.refresh_interval_s // 5)} "
                      "snapshots, more than its retention's max_snapshots: expiry does not keep up with its commits "
                      "(every commit rewrites, every reader parses them all)", **table)]},
            {"eval_time": f"{obs.refresh_interval_s}s", "alertname": "MetadataTooLarge", "exp_alerts": [
                fired("MetadataTooLarge", "orchestration", "warning",
                      "sales.orders (owner sales-eng): metadata.json is 1.2MiB, past its retention's "
                      "max_metadata_size: commits and planning slow down with it", **table)]},
            {"eval_time": f"{manifests_for}s", "alertname": "ManifestsPiling", "exp_alerts": [
                fired("ManifestsPiling", "orchestration", "info",
                      f"sales.orders (owner sales-eng): {obs.manifests_alert + 1} manifests in its current snapshot, "
                      "each read by every scan's planning: rewrite_manifests is not keeping up", **table),
                fired("ManifestsPiling", "orchestration", "info",
                      f"sales.lost (owner ): {obs.manifests_alert + 5} manifests in its current snapshot, "
                      "each read by every scan's planning: rewrite_manifests is not keeping up",
                      catalog="rest-fixture", namespace="sales", table="lost")]},
            {"eval_time": "300s", "alertname": "ServiceDiskOverBudget", "exp_alerts": [
                fired("ServiceDiskOverBudget", "observability", "critical",
                      "kafka's state takes 1.863GiB on disk, past its disk budget", service="kafka")]},
            {"eval_time": f"{obs.disk_forecast_for_s - 60}s", "alertname": "ServiceDiskFilling", "exp_alerts": []},
            {"eval_time": f"{obs.disk_forecast_for_s + 600}s", "alertname": "ServiceDiskFilling", "exp_alerts": [
                fired("ServiceDiskFilling", "observability", "warning",
                      f"kafka's state, growing as over the last {obs.disk_forecast_window_hours} hours, passes its "
                      f"disk budget within {obs.disk_forecast_days} days", service="kafka"),
                fired("ServiceDiskFilling", "observability", "warning",
                      f"postgres's state, growing as over the last {obs.disk_forecast_window_hours} hours, passes its "
                      f"disk budget within {obs.disk_forecast_days} days", service="postgres")]},
            {"eval_time": "65s", "alertname": "ReplicationSlotLagging", "exp_alerts": []},
            {"eval_time": "70s", "alertname": "ReplicationSlotLagging", "exp_alerts": [
                fired("ReplicationSlotLagging", "catalog", "warning",
                      "replication slot bookshop_debezium holds 300MiB of WAL: its reader (Debezium) fell behind or "
                      "stopped; past streams.slot_max_wal_keep_size the database drops what it holds and the "
                      "connector snapshots again", slot="bookshop_debezium")]},
        ],
    }]}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False))
    done = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "SUCCESS" in output, output
