"""Malformed stack configs: each fails before any resource, with the key path and what is allowed."""

from __future__ import annotations

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from tests.support.harness import run_program
from tests.support.stacks import stack_platform

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
        lambda p: p["services"].update({"polaris-bootstrap": {"depends_on": ["kafka"]}, "kafka": {"enabled": False}}),
        f"{P}.services.polaris-bootstrap.depends_on: 'kafka' is disabled in this stack; "
        "enable services.kafka or disable polaris-bootstrap",
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
        "heap, disk, logs, depends_on, restart",
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
        "test server with SQLite behind it; use polaris); disable it. Allowed on aws: postgres, "
        "polaris, trino, lakehouse-exporter, prometheus, flink-jobmanager, maintenance-scheduler, catalog-backup",
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
    assert refused == ["seaweedfs", "rest-fixture", "kafka"]  # Lakekeeper: off in the lab too (ADR 0013)
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

    from tests.support.harness import RecordingMocks

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
        "obtainable from the package registries); disable it. Allowed on native: "
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


# An identity the stack declares beside the defaults (platform, writer, reader): its own keys everywhere.
ETL = {"access_key": "etl-access-key", "actions": ["Read", "Write", "List"], "secret_config_key": "s3EtlSecretKey"}

# Issue 18: each was accepted (or crashed) and is now refused before any resource, with the key and what is allowed.
REFUSED_NOW = {
    # Identities: a shared key is a shared credential, and the catalog gate keys identities by token (last wins).
    "an identity taking the reader's catalog token key": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "catalog_token_config_key": "catalogTokenReader"}}),
        f"{P}.identities.etl.catalog_token_config_key: 'catalogTokenReader' is also the stack config key of "
        "identities.reader's catalog token (by default); each secret of an identity (secret key, catalog token, "
        "Polaris client secret, Trino password) needs a key of its own: a shared secret is one credential, and whoever holds it has both "
        "identities' rights (a reader's token could write)",
    ),
    "an identity sharing the reader's access key": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "access_key": "reader-access-key"}}),
        f"{P}.identities.etl.access_key: 'reader-access-key' is also the access key of identities.reader; each "
        "identity needs its own: the store knows an identity by its access key, so one would act with the other's "
        "rights",
    ),
    "an identity sharing the writer's secret key": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "secret_config_key": "s3WriterSecretKey"}}),
        f"{P}.identities.etl.secret_config_key: 's3WriterSecretKey' is also the stack config key of "
        "identities.writer's secret key; each secret of an identity (secret key, catalog token, Polaris client "
        "secret, Trino password) needs a key of its own: a shared secret is one credential, and whoever holds it has both identities' rights (a "
        "reader's token could write)",
    ),
    "an identity's token read from its own secret key": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "catalog_token_config_key": "s3EtlSecretKey"}}),
        f"{P}.identities.etl.catalog_token_config_key: 's3EtlSecretKey' is also the stack config key of "
        "identities.etl's secret key; each secret of an identity (secret key, catalog token, Polaris client "
        "secret, Trino password) needs a key of its own: one value would be two credentials of it",
    ),
    "an identity's password read from a service's secret": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "secret_keys": {"trino-password": "postgresPassword"}}}),
        f"{P}.identities.etl.secret_keys.trino-password: 'postgresPassword' is the stack config key of "
        "services.postgres's own secret; name a key of this identity's own",
    ),
    "an identity's key for a per-identity secret no service declares": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "secret_keys": {"trino-pasword": "etlTrino"}}}),
        f"{P}.identities.etl.secret_keys.trino-pasword: no enabled or disabled service declares a per-identity "
        "secret 'trino-pasword'; allowed: polaris-client-secret, trino-password",
    ),
    "an identity's per-identity secret key with the namespace": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "secret_keys": {"trino-password": "lakehouse:etlTrino"}}}),
        f"{P}.identities.etl.secret_keys: trino-password: 'lakehouse:etlTrino' is not a stack config key: letters, "
        "digits, '_' and '-', starting with a letter, named without the 'lakehouse:' namespace (the platform adds it)",
    ),
    "a config key with the namespace": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "secret_config_key": "lakehouse:s3EtlSecretKey"}}),
        f"{P}.identities.etl.secret_config_key: 'lakehouse:s3EtlSecretKey' is not a stack config key: letters, "
        "digits, '_' and '-', starting with a letter, named without the 'lakehouse:' namespace (the platform adds it)",
    ),
    "an unknown identity action shows what is accepted": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "actions": ["read"]}}),
        f"{P}.identities.etl.actions.0: 'read' is not allowed; input should be 'Admin', 'Read', 'Write', 'List' or "
        "'Tagging'",
    ),
    "an identity without actions": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "actions": []}}),
        f"{P}.identities.etl.actions: [] is not allowed: list at least 1",
    ),
    "an action listed twice": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "actions": ["Read", "List", "Read"]}}),
        f"{P}.identities.etl.actions: Read listed twice; list each action once",
    ),
    "an access key with a space": (
        "lab", lambda p: p.update(identities={"etl": {**ETL, "access_key": "etl key"}}),
        f"{P}.identities.etl.access_key: 'etl key' is not an access key id: 3 to 128 letters, digits, '.', '_' and "
        "'-', starting with a letter or digit (it is part of every signed request)",
    ),
    "an identity that is null": (
        "lab", lambda p: p.update(identities={"etl": None}),
        f"{P}.identities.etl: must be a mapping of settings, got None",
    ),
    "a reader that cannot read": (
        "lab", lambda p: p.update(identities={"reader": {"actions": ["List"]}}),
        f"{P}.governance.reader: identity 'reader' has actions List without Read; the read-only identity reads "
        "through every engine: add Read",
    ),
    "a writer that cannot read": (
        "lab", lambda p: p.update(identities={"writer": {"actions": ["Write", "List"]}}),
        f"{P}.governance.writer: identity 'writer' has actions Write, List without Read; a writer reads the table's "
        "metadata before every commit: add Read",
    ),
    # Streams: brokers never create a topic on first use.
    "flink reading a topic nobody declared": (
        "native", lambda p: p.update(flink={"job": {"source": "kafka", "kafka_topic": "order-events"}}),
        f"{P}.flink.job.kafka_topic: 'order-events' is not a topic the stack declares, and the broker creates no "
        "topic on first use, so the job would wait for it forever; allowed: orders (streams.topics), or declare it "
        "there",
    ),
    "flink on auto reading a topic nobody declared": (
        "native", lambda p: p.update(flink={"job": {"kafka_topic": "order-events"}}),
        f"{P}.flink.job.kafka_topic: 'order-events' is not a topic the stack declares, and the broker creates no "
        "topic on first use, so the job would wait for it forever; allowed: orders (streams.topics), or declare it "
        "there",
    ),
    # Services.
    "a restart backoff that shrinks": (
        "lab", lambda p: p["services"].update(trino={"restart": {"backoff_initial_s": 60, "backoff_max_s": 1}}),
        f"{P}.services.trino.restart.backoff_max_s: 1 is shorter than backoff_initial_s 60; the delay starts at "
        "backoff_initial_s and doubles up to backoff_max_s, so the longest delay must be at least the first",
    ),
    "a health path without its slash": (
        "lab", lambda p: p["services"].update(trino={"health": {"kind": "http", "port": "http", "path": "v1/info"}}),
        f"{P}.services.trino.health.path: 'v1/info' is not an HTTP path: it starts with '/' and holds no spaces, "
        "e.g. /healthz",
    ),
    "a deployment that stops waiting before the start period ends": (
        "lab", lambda p: p["services"].update(trino={"health": {"kind": "http", "port": "http", "path": "/v1/info",
                                                                "start_period_s": 300, "ready_timeout_s": 120}}),
        f"{P}.services.trino.health.ready_timeout_s: 120 is shorter than start_period_s 300; the deployment would "
        "give up on the service while it is still allowed to start: wait at least the start period",
    ),
    "an environment name holding its value": (
        "lab", lambda p: p["services"].update(trino={"env": {"JAVA_OPTS=-Xmx1g": ""}}),
        f"{P}.services.trino.env: 'JAVA_OPTS=-Xmx1g' is not an environment variable name: no '=', spaces or NUL, "
        "not empty",
    ),
    "two ports of one service on one number": (
        "lab", lambda p: p["services"].update(trino={"ports": {"https": {"internal": 8080}}}),
        f"{P}.services.trino.ports.https.internal: 8080 is also ports.http.internal; two ports of one service cannot "
        "share a number",
    ),
    "a port named by an unquoted number": (
        "lab", lambda p: p["services"].update(trino={"ports": {8080: {"internal": 8080}}}),
        f"{P}.services.trino.ports: the key 8080 is not a name; keys are strings (quote it: '8080')",
    ),
    "a port that is not a whole number": (
        "lab", lambda p: p["services"].update(trino={"ports": {"http": {"internal": 8080.5}}}),
        f"{P}.services.trino.ports.http.internal: 8080.5 is not allowed; input should be a valid integer, got a "
        "number with a fractional part",
    ),
    "a resource name prefix in capitals": (
        "lab", lambda p: p.update(name="Lakehouse"),
        f"{P}.name: 'Lakehouse' is not a resource name prefix: lowercase letters, digits and -, 2 to 31 characters, "
        "starting with a letter",
    ),
    # Catalog and storage.
    "a negative Spark cache expiry": (
        "lab", lambda p: p.update(catalog={"spark_cache_expiration_ms": -5}),
        f"{P}.catalog.spark_cache_expiration_ms: -5 is not allowed; input should be greater than or equal to -1",
    ),
    "a warehouse prefix written as a URI": (
        "lab", lambda p: p.update(storage={"warehouse_prefixes": ["s3://warehouse/tables/"]}),
        f"{P}.storage.warehouse_prefixes: 's3://warehouse/tables/' is not a key prefix inside the bucket: no scheme "
        "or bucket, no leading '/' and no '..' (e.g. 'warehouse/' or '' for the whole bucket)",
    ),
    "no warehouse prefix (no lifecycle rule would be checked)": (
        "lab", lambda p: p.update(storage={"warehouse_prefixes": []}),
        f"{P}.storage.warehouse_prefixes: [] is not allowed: list at least 1",
    ),
    # Tables as code: what Iceberg refuses when the table is created, what the platform would overwrite.
    "a year partition of an int column": (
        "native", lambda p: p["tables"][0].update(partition_by=[{"source": "customer_id", "transform": "year"}]),
        f"{P}.tables.0.partition_by.0.transform: year does not apply to 'customer_id', a column of type int (Iceberg "
        "refuses it when the table is created); year takes date, timestamp, timestamptz",
    ),
    "a bucket partition of a double column": (
        "native", lambda p: p["tables"][0].update(
            columns=[*p["tables"][0]["columns"], {"name": "score", "type": "double"}],
            partition_by=[{"source": "score", "transform": "bucket", "width": 16}]),
        f"{P}.tables.0.partition_by.0.transform: bucket does not apply to 'score', a column of type double (Iceberg "
        "refuses it when the table is created); bucket takes int, long, decimal(10,2), decimal(38,2), date, "
        "timestamp, timestamptz, string, uuid, binary",
    ),
    "a partition field listed twice": (
        "native", lambda p: p["tables"][0].update(partition_by=[{"source": "order_ts", "transform": "day"},
                                                                {"source": "order_ts", "transform": "day"}]),
        f"{P}.tables.0.partition_by.1: day(order_ts) is listed twice",
    ),
    "a table property the platform writes": (
        "native", lambda p: p["tables"][0].update(properties={"owner": "someone"}),
        f"{P}.tables.0.properties: owner is written by the platform from the table's owner (it would replace this "
        "value); set the typed field instead",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED_NOW))
def test_config_accepted_before_is_refused_with_the_key_and_what_is_allowed(case):
    stack, mutate, expected = REFUSED_NOW[case]
    platform = stack_platform(stack)
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source=f"Pulumi.{stack}.yaml")
    assert info.value.errors == [expected]


def test_an_identity_with_keys_of_its_own_is_accepted():
    platform = stack_platform("lab")
    platform["identities"] = {"etl": ETL}
    assert load_platform(platform).role_of_identity("etl") == "writer"


def test_a_stack_file_with_a_list_as_a_key_is_refused(tmp_path):
    from lakehouse_platform.config import read_stack_config

    path = tmp_path / "Pulumi.keys.yaml"
    path.write_text("config:\n  lakehouse:platform:\n    target: docker\n    ? [a, b]\n    : 1\n")
    with pytest.raises(ConfigError) as info:
        read_stack_config(path)
    (error,) = info.value.errors
    assert error.startswith("Pulumi.keys.yaml: not valid YAML: while reading a mapping")
    assert "a key is a list; every key of a stack config is a name (a plain string)" in error
    assert "line 4, column 7" in error


def test_a_stack_file_that_is_not_utf8_is_refused(tmp_path):
    from lakehouse_platform.config import read_stack_config

    path = tmp_path / "Pulumi.latin1.yaml"
    path.write_bytes("config:\n  # café\n  lakehouse:platform:\n    target: docker\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        read_stack_config(path)
    assert info.value.errors == [
        "Pulumi.latin1.yaml: line 2, column 8: byte 0xe9 is not UTF-8 (a Latin-1 or Windows-1252 character?); "
        "Pulumi reads stack files as UTF-8: save the file as UTF-8"]


@pytest.mark.parametrize("case", list(BREAKS_AT_DEPLOY))
def test_config_that_would_break_at_deploy_time_is_refused(case):
    stack, mutate, expected = BREAKS_AT_DEPLOY[case]
    platform = stack_platform(stack)
    mutate(platform)
    with pytest.raises(ConfigError) as info:
        load_platform(platform, source=f"Pulumi.{stack}.yaml")
    assert info.value.errors == [expected]


def test_a_key_given_twice_in_a_stack_file_is_refused(tmp_path):
    from lakehouse_platform.config import read_stack_config

    path = tmp_path / "Pulumi.twice.yaml"
    path.write_text("config:\n  lakehouse:platform:\n    target: docker\n    storage:\n"
                    "      bucket: warehouse\n      bucket: other\n")
    with pytest.raises(ConfigError) as info:
        read_stack_config(path)
    (error,) = info.value.errors
    assert error.startswith("Pulumi.twice.yaml: not valid YAML: while reading a mapping")
    assert "key 'bucket' appears twice (first on line 5); Pulumi refuses duplicate keys too" in error


def test_the_defaults_of_a_target_disable_what_cannot_run_there() -> None:
    """What the probes' support uses without a stack file: the registry's defaults, loadable on each target."""
    from lakehouse_platform.config import target_defaults
    from lakehouse_platform.services.registry import registry

    for target in ("native", "docker"):  # on aws a stack also names its catalog (the fixture cannot run there)
        spec = target_defaults(target)
        unavailable = {name for name, where in registry().placement().items() if target in {t.value for t in where}}
        assert spec.target.value == target
        assert not any(spec.services[name].enabled for name in unavailable if name in spec.services)
    assert target_defaults("native").services["trino"].enabled
