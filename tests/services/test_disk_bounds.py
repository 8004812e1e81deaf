"""Every disk bounded by a key, on every target where it applies: the settings each service renders from the spec
(natively, in the lab, and on aws the managed services' own under Pulumi mocks)."""

from __future__ import annotations

import json

from lakehouse_platform.config import load_platform
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.flink import config as flink
from lakehouse_platform.services.kafka import config as kafka
from lakehouse_platform.services.kafka_connect import config as connect
from lakehouse_platform.services.postgres import config as postgres
from lakehouse_platform.services.trino import config as trino
from tests.support.aws_graph import the
from tests.support.harness import ProgramRun
from tests.support.rendered import envs, plain
from tests.support.stacks import stack_platform

LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"


def _native(**changes) -> dict:
    platform = stack_platform("native")
    platform.update(changes)
    return platform


def test_postgres_bounds_its_wal_a_slots_wal_and_vacuums_as_the_spec_says():
    spec = load_platform(_native(catalog={"database": {"max_wal_size": "512MB", "autovacuum_naptime_s": 30}},
                                 streams={"slot_max_wal_keep_size": "2GiB"}))
    settings = postgres.server_settings(spec)
    assert settings["wal_level"] == "logical"
    assert (settings["max_wal_size"], settings["min_wal_size"]) == ("512MB", "64MB")
    assert settings["max_slot_wal_keep_size"] == f"{2 * 1024**3 // 1_000_000}MB"
    assert settings["autovacuum_naptime"] == "30s"
    defaults = postgres.server_settings(load_platform(stack_platform("native")))
    assert (defaults["max_wal_size"], defaults["max_slot_wal_keep_size"]) == ("256MB", "1073MB")


def test_natively_postgres_runs_with_those_flags(native_run: ProgramRun):
    argv = next(s for s in native_run.of_type(LOCAL_SERVICE) if s.name == "postgres").inputs["argv"]
    flags = dict(arg.split("=", 1) for arg in argv if "=" in arg and not arg.startswith("-"))
    assert flags["max_wal_size"] == "256MB" and flags["max_slot_wal_keep_size"] == "1073MB"
    assert flags["shared_buffers"] == "64MB" and flags["autovacuum_naptime"] == "60s"


def test_on_aws_rds_takes_the_same_bounds_and_alarms_on_a_lagging_slot(cloud: ProgramRun):
    parameters = {p["name"]: p["value"]
                  for p in the(cloud, "aws:rds/parameterGroup:ParameterGroup").inputs["parameters"]}
    assert (parameters["max_wal_size"], parameters["min_wal_size"]) == ("256", "64")  # RDS's unit: MB
    assert parameters["max_slot_wal_keep_size"] == "1073"
    assert parameters["autovacuum_naptime"] == "60"  # seconds
    alarms = {r.name: r.inputs for r in cloud.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")}
    lag = alarms["lakehouse-catalog-db-slot-lag"]
    assert (lag["metricName"], lag["namespace"], lag["threshold"]) == ("OldestReplicationSlotLag", "AWS/RDS",
                                                                      256 * 1024**2)


def test_kafka_keeps_each_partition_by_time_and_size_on_every_target(lab, streaming: ProgramRun):
    spec = load_platform(_native(streams={"retention_hours": 24, "retention_bytes": "256MiB",
                                          "segment_bytes": "16MiB"}))
    broker = kafka.broker_properties(ServiceContext(spec, kafka.KAFKA), "127.0.0.1", "/data")
    assert (broker["log.retention.hours"], broker["log.retention.bytes"], broker["log.segment.bytes"]) == (
        "24", str(256 * 1024**2), str(16 * 1024**2))
    # The lab's broker (defaults), and MSK's own configuration attached to the cluster.
    lab_env = envs(lab.named("kafka"))
    assert (lab_env["KAFKA_LOG_RETENTION_BYTES"], lab_env["KAFKA_LOG_RETENTION_HOURS"]) == ("1073741824", "168")
    configuration = the(streaming, "aws:msk/configuration:Configuration").inputs
    assert configuration["serverProperties"].splitlines() == [
        "log.retention.hours=168", "log.retention.bytes=1073741824", f"log.segment.bytes={64 * 1024**2}"]
    assert "arn" in the(streaming, "aws:msk/cluster:Cluster").inputs["configurationInfo"]


def test_flink_keeps_the_checkpoints_the_spec_says():
    spec = load_platform(_native(flink={"retained_checkpoints": 5, "job": {"source": "generator"}}))
    conf = flink.flink_config(ServiceContext(spec, flink.JOBMANAGER), "jobmanager", "file:///state", "127.0.0.1",
                              "127.0.0.1", "127.0.0.1")
    assert conf["execution.checkpointing.num-retained"] == 5


def test_trinos_own_request_log_stays_within_its_log_settings():
    spec = load_platform(_native(services={**stack_platform("native")["services"],
                                           "trino": {"logs": {"max_size": "8MiB", "keep": 3}}}))
    text = trino.config_properties(8080, "single", "http://127.0.0.1:8080", 768 * 1024**2,
                                   logs=spec.services["trino"].logs)
    assert "http-server.log.max-size=8MB\n" in text and "http-server.log.max-history=3\n" in text


def test_natively_each_watchdog_rotates_its_services_log(native_run: ProgramRun):
    services = {s.name: s.inputs for s in native_run.of_type(LOCAL_SERVICE)}
    assert services["trino"]["log_rotation"] == {"max_bytes": 32 * 1024**2, "keep": 2}
    assert all(inputs["log_rotation"]["max_bytes"] >= 1024**2 for inputs in services.values())


def test_the_sinks_table_gets_the_platforms_table_properties_when_it_creates_it():
    spec = load_platform(stack_platform("native"))
    sink = spec.streams.sinks()[0]
    rendered = connect.sink_config(ServiceContext(spec, connect.CONNECT), sink)
    props = {k.removeprefix("iceberg.tables.auto-create-props."): v for k, v in rendered.items()
             if k.startswith("iceberg.tables.auto-create-props.")}
    assert props == {"format-version": "2", **spec.table_properties(sink.table, spec.table_bounds(sinks=True))}
    assert props["commit.retry.num-retries"] == "20" and props["write.metadata.previous-versions-max"] == "100"


def test_the_exporter_watches_each_services_state_against_its_budget_and_the_slots(native_run: ProgramRun):
    exporter = next(s for s in native_run.of_type(LOCAL_SERVICE) if s.name == "lakehouse-exporter").inputs
    config = json.loads(next(body for path, body in exporter["files"].items() if path.endswith("exporter.json")))
    budgets = {s["name"]: s["disk_budget_bytes"] for s in config["services"]}
    assert budgets["postgres"] == 2 * 1024**3 and budgets["kafka"] == 4 * 1024**3
    assert all(s["log_file"].endswith(f"/logs/{s['name']}.log") for s in config["services"])
    assert config["database"]["password"] == "${ENV:DATABASE_PASSWORD}"  # the value only in its environment
    assert plain(plain(exporter["env"]))["DATABASE_PASSWORD"] == "lab-postgres-password"
    tables = {f"{t['namespace']}.{t['name']}": t for t in config["tables"]}
    assert tables["streams.orders"]["declared"] is False and tables["shop.orders"]["declared"] is True
    assert tables["streams.orders"]["max_snapshots"] == 500 and config["default_max_snapshots"] == 500
