"""Malformed stack configs: each fails before any resource, with the key path and what is allowed."""

from __future__ import annotations

import pytest
from conftest import stack_platform
from harness import run_program

from infra.config import ConfigError, load_platform

P = "lakehouse:platform"

CASES = {
    "unknown layer": (
        lambda p: p["layers"].update({"networking": {"owner": "x"}}),
        f"{P}.layers.networking: unknown layer 'networking'; allowed: storage, catalog, compute, governance, "
        "orchestration, observability, recovery",
    ),
    "unknown service": (
        lambda p: p["services"].update({"minio": {"enabled": True}}),
        f"{P}.services.minio: unknown service 'minio'; allowed: seaweedfs, seaweedfs-bucket, postgres, "
        "rest-fixture-init, rest-fixture, catalog-gate, polaris-bootstrap, polaris, polaris-catalog, lakekeeper-migrate, "
        "lakekeeper, lakekeeper-warehouse, lakekeeper-s3-loopback, trino, lakehouse-exporter, prometheus, flink-state-init, "
        "flink-jobmanager, flink-taskmanager, flink-orders-job, kafka, kafka-topics, kafka-connect, maintenance-scheduler, "
        "catalog-backup",
    ),
    "layer without owner": (
        lambda p: p["layers"].update({"catalog": {"owner": "  "}}),
        f"{P}.layers.catalog.owner: every layer needs an owner: name the team that answers for it",
    ),
    "port clash": (
        lambda p: p["services"].update({"polaris": {"ports": {"http": {"external": 8182}}}}),
        f"{P}.services.polaris.ports.http.external: port 8182 is already taken by "
        "services.catalog-gate.ports.http.external; every external port must be unique",
    ),
    "latest image": (
        lambda p: p["services"].update({"trino": {"image": "trinodb/trino:latest"}}),
        f"{P}.services.trino.image: image 'trinodb/trino:latest' uses 'latest'; pin an explicit version tag",
    ),
    "unpinned image": (
        lambda p: p["services"].update({"trino": {"image": "trinodb/trino"}}),
        f"{P}.services.trino.image: image 'trinodb/trino' has no tag; pin a version such as trinodb/trino:1.2.3",
    ),
    "memory not a size": (
        lambda p: p["services"].update({"trino": {"memory": "lots"}}),
        f"{P}.services.trino.memory: 'lots' is not a size; use a number with a unit, such as 512MiB, 1.5GiB or 800MB",
    ),
    "dependency on a disabled service": (
        lambda p: p["services"].update({"lakekeeper-migrate": {"depends_on": ["kafka"]}, "kafka": {"enabled": False}}),
        f"{P}.services.lakekeeper-migrate.depends_on: 'kafka' is disabled in this stack; "
        "enable services.kafka or disable lakekeeper-migrate",
    ),
    "in-memory sqlite": (
        lambda p: p["catalog"].update({"fixture_jdbc_uri": "jdbc:sqlite:file:/tmp/iceberg_rest?mode=memory"}),
        f"{P}.catalog.fixture_jdbc_uri: 'jdbc:sqlite:file:/tmp/iceberg_rest?mode=memory' is an in-memory SQLite "
        "database: each pooled connection gets its own empty copy (no such table: iceberg_tables under concurrent "
        "commits); use a file, e.g. jdbc:sqlite:file:/catalog/fixture.db",
    ),
    "unknown target": (
        lambda p: p.update({"target": "kubernetes"}),
        f"{P}.target: 'kubernetes' is not allowed; input should be 'docker', 'aws' or 'native'",
    ),
    "port out of range": (
        lambda p: p["services"].update({"trino": {"ports": {"http": {"external": 70000}}}}),
        f"{P}.services.trino.ports.http.external: 70000 is not allowed; input should be less than or equal to 65535",
    ),
    "misspelt key": (
        lambda p: p["services"].update({"trino": {"memroy": "2GiB"}}),
        f"{P}.services.trino.memroy: unknown key; allowed: layer, enabled, role, owner, kind, version, "
        "native_version, bundles, native_bundles, aws_version, aws_bundles, image, ports, env, command, health, memory, "
        "heap, depends_on, restart",
    ),
    "heap above budget": (
        lambda p: p["services"].update({"trino": {"heap": "4GiB"}}),
        f"{P}.services.trino: heap 4GiB must be smaller than the memory budget 2GiB",
    ),
    "bad cron": (
        lambda p: p.update({"maintenance": [{"action": "expire_snapshots", "schedule": "daily"}]}),
        f"{P}.maintenance.0.schedule: 'daily' is not a cron expression of five fields (minute hour day month weekday)",
    ),
    "services not a mapping": (
        lambda p: p.update({"services": ["trino"]}),
        f"{P}.services: must be a mapping of name -> settings",
    ),
}

# Cases that start from the cloud stack (CASES start from the lab).
CLOUD_CASES = {
    # The user-facing reason first: not "depends on a disabled seaweedfs, enable it" (itself refused on aws).
    "fixture on aws": (
        lambda p: p["services"].update({"rest-fixture": {"enabled": True}}),
        f"{P}.services.rest-fixture.enabled: rest-fixture does not run on the aws target (the REST fixture is a "
        "test server with SQLite behind it; use polaris or lakekeeper); disable it. Allowed on aws: postgres, "
        "polaris, lakekeeper, trino, lakehouse-exporter, prometheus, flink-jobmanager, maintenance-scheduler, catalog-backup",
    ),
}


@pytest.mark.parametrize("case", list(CLOUD_CASES))
def test_malformed_cloud_config_is_refused_with_exact_message(case):
    mutate, expected = CLOUD_CASES[case]
    platform = stack_platform("cloud")
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source="Pulumi.cloud.yaml")
    assert info.value.errors == [expected]


def test_the_lab_on_aws_names_every_service_aws_cannot_run_with_its_reason():
    platform = stack_platform("lab")
    platform["target"] = "aws"
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source="Pulumi.lab.yaml")
    refused = [e.split(": ", 1)[0].removeprefix(f"{P}.services.").removesuffix(".enabled") for e in info.value.errors]
    # Flink runs on aws (Managed Service for Apache Flink), so it is not among them; Connect follows Kafka.
    assert refused == ["seaweedfs", "rest-fixture", "lakekeeper-s3-loopback", "kafka"]
    assert "(on aws the store is S3 itself)" in info.value.errors[0]


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_config_is_refused_with_exact_message(case):
    mutate, expected = CASES[case]
    platform = stack_platform("lab")
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source="Pulumi.lab.yaml")
    assert info.value.errors == [expected]
    assert str(info.value).startswith("invalid platform config in Pulumi.lab.yaml:\n  - ")


def test_missing_platform_object_is_refused():
    with pytest.raises(ConfigError) as info:
        load_platform(None)
    assert info.value.errors == [f"{P}: missing; the stack must set at least {P}.target"]


def test_program_fails_before_any_resource_without_traceback():
    platform = stack_platform("lab")
    platform["layers"]["storage"] = {"owner": ""}
    import pulumi

    with pytest.raises(pulumi.RunError) as info:
        run_program("lab", platform)
    assert "lakehouse:platform.layers.storage.owner: every layer needs an owner" in str(info.value)


def test_program_registers_nothing_on_bad_config():
    import pulumi
    from harness import RecordingMocks

    platform = stack_platform("lab")
    platform["services"]["trino"] = {"image": "trinodb/trino:latest"}
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError):
        run_program("lab", platform, mocks=mocks)
    assert mocks.resources == []


# Config that used to be accepted and would break at deploy time (each refused before any resource).
BREAKS_AT_DEPLOY = {
    "cron out of range": (
        "lab", lambda p: p["maintenance"].append({"action": "expire_snapshots", "schedule": "61 25 * * *"}),
        f"{P}.maintenance.2.schedule: '61 25 * * *' is not a valid cron expression: minute 61 is out of range; "
        "allowed: 0-59",
    ),
    "cron that never fires": (
        "lab", lambda p: p["maintenance"].append({"action": "expire_snapshots", "schedule": "0 3 31 2 *"}),
        f"{P}.maintenance.2.schedule: '0 3 31 2 *' never fires: day 31 of the month does not occur in February",
    ),
    "cron weekday out of range (7 is Sunday, 8 is nothing)": (
        "lab", lambda p: p["maintenance"].append({"action": "expire_snapshots", "schedule": "0 3 * * 8"}),
        f"{P}.maintenance.2.schedule: '0 3 * * 8' is not a valid cron expression: day-of-week 8 is out of range; "
        "allowed: 0-7 or sun-sat (0 and 7 are Sunday)",
    ),
    "backup schedule that never fires": (
        "native", lambda p: p.update(recovery={"backup_schedule": "*/15 * 30 2 *"}),
        f"{P}.recovery.backup_schedule: '*/15 * 30 2 *' never fires: day 30 of the month does not occur in February",
    ),
    "bucket with two dots": (
        "lab", lambda p: p.setdefault("storage", {}).update(bucket="lakehouse..warehouse"),
        f"{P}.storage.bucket: 'lakehouse..warehouse' has two adjacent dots (S3 bucket naming rules)",
    ),
    "bucket like an IP address": (
        "lab", lambda p: p.setdefault("storage", {}).update(bucket="192.168.10.20"),
        f"{P}.storage.bucket: '192.168.10.20' is formatted as an IP address (S3 bucket naming rules)",
    ),
    "alarm email": (
        "cloud", lambda p: p.setdefault("observability", {}).update(alarm_email="not-an-email"),
        f"{P}.observability.alarm_email: 'not-an-email' is not an email address (value is not a valid email "
        "address: An email address must have an @-sign.)",
    ),
    "zero memory": (
        "lab", lambda p: p["services"].update({"trino": {"memory": "0MiB"}}),
        f"{P}.services.trino.memory: '0MiB' is too small: at least 16MiB (a memory limit of 0 would mean "
        "unlimited to Docker)",
    ),
    "plain-text credential in env": (
        "lab", lambda p: p["services"].update({"postgres": {"env": {"POSTGRES_PASSWORD": "hunter2"}}}),
        f"{P}.services.postgres.env: POSTGRES_PASSWORD holds a credential in plain text; secrets belong in secret "
        "config: `pulumi config set --secret lakehouse:<name> <value>` (see README, Configuration)",
    ),
    "backups less often than the recovery point": (
        "native", lambda p: p.update(recovery={"backup_schedule": "0 3 * * *", "rpo_minutes": 60}),
        f"{P}.recovery.backup_schedule: '0 3 * * *' leaves up to 1440 minutes between backups, more than "
        "recovery.rpo_minutes (60); back up at least every 60 minutes (e.g. '*/59 * * * *') or state a longer "
        "rpo_minutes",
    ),
    "backup schedule not a cron": (
        "native", lambda p: p.update(recovery={"backup_schedule": "hourly"}),
        f"{P}.recovery.backup_schedule: 'hourly' is not a cron expression of five fields (minute hour day month "
        "weekday)",
    ),
    "maintenance without its scheduler": (
        "native", lambda p: p["services"].update({"maintenance-scheduler": {"enabled": False}}),
        f"{P}.maintenance: the jobs are scheduled by services.maintenance-scheduler, which is disabled; enable it "
        "or remove maintenance (nothing else runs them)",
    ),
    "maintenance without trino": (
        "native", lambda p: p["services"].update({"trino": {"enabled": False}}),
        f"{P}.maintenance: on native maintenance runs through Trino (its Iceberg procedures, from the maintenance "
        "scheduler); enable services.trino or remove maintenance",
    ),
    "maintenance scope": (
        "native", lambda p: p["maintenance"][0].update(scope="some"),
        f"{P}.maintenance.0.scope: 'some' is not allowed; input should be 'all' or 'declared'",
    ),
    "a table declared twice": (
        "native", lambda p: p["tables"].append(dict(p["tables"][0])),
        f"{P}.tables.2: shop.orders is declared twice",
    ),
    "native port clash with an internal port": (
        "native", lambda p: p["services"].update({"trino": {"ports": {"http": {"internal": 8080, "external": 9340}}}}),
        f"{P}.services.trino.ports.http.external: port 9340 is already taken by services.seaweedfs.ports.volume."
        "internal; natively every port of every service binds 127.0.0.1, so every port must be unique",
    ),
    "lakekeeper on native names the service and its reason": (
        "native", lambda p: p["services"].update({"lakekeeper": {"enabled": True}}),
        f"{P}.services.lakekeeper.enabled: lakekeeper does not run on the native target (no build of Lakekeeper is "
        "obtainable from the package registries; it runs on docker and aws); disable it. Allowed on native: "
        "seaweedfs, postgres, rest-fixture, trino, lakehouse-exporter, prometheus, flink-jobmanager, kafka, "
        "maintenance-scheduler, catalog-backup",
    ),
    "polaris on native names the service and its reason": (
        "native", lambda p: p["services"].update({"polaris": {"enabled": True}}),
        f"{P}.services.polaris.enabled: polaris does not run on the native target (no registry serves Polaris's "
        "server (Maven Central has only polaris-core); it runs on docker and aws); disable it. Allowed on native: "
        "seaweedfs, postgres, rest-fixture, trino, lakehouse-exporter, prometheus, flink-jobmanager, kafka, "
        "maintenance-scheduler, catalog-backup",
    ),
    "flink job wider than its slots": (
        "native", lambda p: p.update({"flink": {"job": {"parallelism": 3}}}),
        f"{P}.flink.job.parallelism: 3 exceeds flink.task_slots (2); the job would wait for slots forever",
    ),
    "flink job reading a disabled kafka": (
        "native", lambda p: (p["services"].update({"kafka": {"enabled": False}}),
                             p.update({"flink": {"job": {"source": "kafka"}}})),
        f"{P}.flink.job.source: 'kafka' reads the orders topic, but services.kafka is disabled in this stack; "
        "enable services.kafka, or use 'generator' or 'auto'",
    ),
    "flink task manager too small for its process": (
        "native", lambda p: p["services"].update({"flink-taskmanager": {"memory": "1GiB"}}),
        f"{P}.services.flink-taskmanager.memory: 1GiB minus flink.process_headroom 256MiB leaves a Flink process "
        "under 1024MiB (JVM overhead, metaspace and Flink's framework memory do not fit); raise the budget",
    ),
    "flink job table not namespace.name": (
        "native", lambda p: p.update({"flink": {"job": {"table": "orders"}}}),
        f"{P}.flink.job.table: 'orders' is not namespace.name: lowercase letters, digits and _, e.g. streams.orders",
    ),
    "flink job source misspelt": (
        "native", lambda p: p.update({"flink": {"job": {"source": "kafak"}}}),
        f"{P}.flink.job.source: 'kafak' is not allowed; input should be 'auto', 'generator' or 'kafka'",
    ),
}


@pytest.mark.parametrize("case", list(BREAKS_AT_DEPLOY))
def test_config_that_would_break_at_deploy_time_is_refused(case):
    stack, mutate, expected = BREAKS_AT_DEPLOY[case]
    platform = stack_platform(stack)
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source=f"Pulumi.{stack}.yaml")
    assert info.value.errors == [expected]


def test_a_key_given_twice_in_a_stack_file_is_refused(tmp_path):
    from infra.config import read_stack_config

    path = tmp_path / "Pulumi.twice.yaml"
    path.write_text("config:\n  lakehouse:platform:\n    target: docker\n    storage:\n"
                    "      bucket: warehouse\n      bucket: other\n")
    with pytest.raises(ConfigError) as info:
        read_stack_config(path)
    (error,) = info.value.errors
    assert error.startswith("Pulumi.twice.yaml: not valid YAML: while reading a mapping")
    assert "key 'bucket' appears twice (first on line 5); Pulumi refuses duplicate keys too" in error
