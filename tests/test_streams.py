"""Streams: the connectors' spec, what native and docker render for Kafka and Connect, the deployment steps.

The native and docker programs run under Pulumi mocks (no engine, nothing deployed); the steps'
providers are checked for what the engine's provider process needs (their own source, no repo);
the bookshop's seed runs for real against a throwaway PostgreSQL where its server binaries exist.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from infra.config import ConfigError, load_platform
from infra.services import ServiceContext
from infra.services.kafka import config as kafka_config
from infra.services.kafka import container as kafka_container
from infra.services.kafka_connect import cdc_source as kafka_connect_cdc_source
from infra.services.kafka_connect import config as kafka_connect_config
from tests.support.harness import SECRET_SIG, run_program
from tests.support.stacks import stack_platform

P = "lakehouse:platform"
LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"
CONNECTOR = "pulumi-python:dynamic/streams:Connector"
SOURCE = "pulumi-python:dynamic/streams:PostgresSource"
SECRET_KEY = "4dabf18193072939515e22adb298388d"


def _secret_value(value):
    assert isinstance(value, dict) and value.get(SECRET_KEY) == SECRET_SIG, f"not a secret: {value!r}"
    return value["value"]


def _plain(value):
    return value["value"] if isinstance(value, dict) and value.get(SECRET_KEY) == SECRET_SIG else value


def _properties(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.fixture(scope="module")
def native_run():
    return run_program("native", stack_platform("native"))


@pytest.fixture(scope="module")
def lab_streams():
    return run_program("lab", stack_platform("lab"))


# -- the spec --------------------------------------------------------------------------------------


def _streams(**changes) -> dict:
    platform = stack_platform("native")
    platform["streams"] = changes
    return platform


SINK = {"kind": "iceberg-sink", "name": "sink1", "topics": ["bookshop.public.orders"], "table": "bookshop.t"}
SOURCE_SPEC = {"kind": "debezium-postgres", "name": "src"}

BAD = {
    "unknown plugin": (
        {"connectors": [{"kind": "jdbc-sink", "name": "x"}]},
        f"{P}.streams.connectors.0: 'jdbc-sink' is not allowed; allowed: 'debezium-postgres', 'iceberg-sink'"),
    "a table the bookshop does not have": (
        {"connectors": [{**SOURCE_SPEC, "tables": ["public.customers"]}]},
        f"{P}.streams.connectors.0.tables: 'public.customers' is not one of the bookshop's "
        "tables the platform creates; allowed: public.orders"),
    "a sink on a topic nobody writes": (
        {"connectors": [SOURCE_SPEC, {**SINK, "topics": ["nowhere"]}]},
        f"{P}.streams.connectors.1.topics: 'nowhere' is neither a declared topic nor written by a source "
        "connector; known: bookshop.public.orders, orders"),
    "a commit interval that cannot keep the promise": (
        {"connectors": [SOURCE_SPEC, {**SINK, "commit_interval_s": 300}]},
        f"{P}.streams.connectors.1.commit_interval_s: a commit every 300 s (timeout 450 s) cannot keep "
        "cdc_visible_within_s 60: raise the promise or commit more often"),
    "a timeout shorter than the interval": (
        {"connectors": [SOURCE_SPEC, {**SINK, "commit_interval_s": 20, "commit_timeout_s": 5}]},
        f"{P}.streams.connectors.1: commit_timeout_s 5 is shorter than commit_interval_s 20: every "
        "commit would time out before the workers answer"),
    "topic.creation inside a connector": (
        {"connectors": [{**SOURCE_SPEC, "config": {"topic.creation.enable": "true"}}]},
        f"{P}.streams.connectors.0.config: config.topic.creation.enable is rendered by the "
        "platform from the connector's typed fields (or, for topic.creation.*, the platform's topics); set the typed "
        "field instead"),
    "a plain password in a connector": (
        {"connectors": [{**SOURCE_SPEC, "config": {"signal.kafka.sasl.password": "hunter2"}}]},
        f"{P}.streams.connectors.0.config: config.signal.kafka.sasl.password holds a credential "
        "in plain text: connector configs are stored in Connect's config topic; reference a config provider "
        "(${env:NAME}) instead"),
    "two connectors of one name": (
        {"connectors": [SOURCE_SPEC, {**SOURCE_SPEC, "slot": "other"}]},
        f"{P}.streams.connectors.1.name: connector 'src' is declared twice"),
    "a bad topic name": (
        {"topics": [{"name": "has space"}]},
        f"{P}.streams.topics.0.name: 'has space' is not a Kafka topic name: 1-249 of letters, digits, '.', '_' "
        "and '-'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_streams_config_is_refused_naming_the_key(case):
    streams, expected = BAD[case]
    with pytest.raises(ConfigError) as info:
        load_platform(_streams(**streams), source="Pulumi.native.yaml")
    assert info.value.errors == [expected]


def test_a_cdc_source_needs_the_platforms_postgres():
    platform = stack_platform("native")
    platform["services"]["postgres"] = {"enabled": False}
    platform["services"]["rest-fixture"] = {"depends_on": ["seaweedfs"]}
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert f"{P}.streams.connectors.0: a Debezium source captures the bookshop in the platform's PostgreSQL; " \
           "enable services.postgres or remove the connector" in info.value.errors


def test_streams_are_on_natively_and_one_edit_turns_them_off():
    on = load_platform(stack_platform("native"))
    assert {"kafka", "kafka-topics", "kafka-connect"} <= set(on.enabled_services())
    platform = stack_platform("native")
    platform["services"]["kafka"] = {"enabled": False}
    off = load_platform(platform)
    assert not {"kafka", "kafka-topics", "kafka-connect"} & set(off.enabled_services())


def test_sink_commit_timeout_defaults_to_one_and_a_half_intervals():
    spec = load_platform(_streams(connectors=[SOURCE_SPEC, {**SINK, "commit_interval_s": 30}], cdc_visible_within_s=120))
    assert spec.streams.sinks()[0].timeout_s == 45


# -- native ------------------------------------------------------------------------------------------


def _service(run, name):
    return next(r for r in run.of_type(LOCAL_SERVICE) if r.name == name)


def test_native_kafka_is_one_kraft_node_on_loopback_with_its_data_under_the_stack_state(native_run):
    broker = _service(native_run, "kafka")
    argv = broker.inputs["argv"]
    assert "-Xmx512m" in argv and argv[-2:][0] == "kafka.Kafka"
    files = {Path(k).name: v for k, v in _plain(broker.inputs["files"]).items()}
    props = _properties(files["server.properties"])
    assert props["process.roles"] == "broker,controller"
    for listener in props["listeners"].split(","):
        assert "//127.0.0.1:" in listener, listener
    assert props["log.dirs"].endswith("/native/kafka/data")
    assert props["transaction.state.log.replication.factor"] == props["transaction.state.log.min.isr"] == "1"
    assert props["auto.create.topics.enable"] == "false"
    format_step = broker.inputs["setup"][0]
    assert "kafka.tools.StorageTool" in format_step and "--ignore-formatted" in format_step
    assert "--standalone" not in format_step  # refused with a static controller.quorum.voters
    topics_step = broker.inputs["post_start"][0]
    assert topics_step[2:4] == ["infra.targets.native.tasks", "create-topics"]
    topics = {t["name"]: t for t in json.loads(topics_step[-1])}
    assert set(topics) == {"orders", "bookshop.public.orders", "iceberg-control"}


def test_native_connect_runs_both_plugins_and_resolves_credentials_from_its_environment(native_run):
    worker = _service(native_run, "kafka-connect")
    argv = worker.inputs["argv"]
    assert argv[-2] == "org.apache.kafka.connect.cli.ConnectDistributed"
    assert argv[-1].endswith("connect-distributed.properties")  # last: the sink reads it from sun.java.command
    assert "-Xmx512m" in argv
    files = {Path(k).name: v for k, v in _plain(worker.inputs["files"]).items()}
    props = _properties(files["connect-distributed.properties"])
    assert props["listeners"].startswith("http://127.0.0.1:")
    assert props["plugin.discovery"] == "service_load"
    assert props["offset.flush.interval.ms"] == "1000"
    assert props["config.providers.env.class"] == kafka_connect_config.ENV_PROVIDER
    assert props["plugin.path"].endswith("/plugins")
    env = _plain(worker.inputs["env"])
    assert env["LAKEHOUSE_BOOKSHOP_CDC_PASSWORD"] == "lab-bookshop-cdc-password"
    assert _secret_value(worker.inputs["env"])  # the whole env is a secret in state


def test_connectors_hold_no_secret_and_reference_the_workers_environment(native_run):
    connectors = {r.inputs["name"]: r for r in native_run.of_type(CONNECTOR)}
    assert set(connectors) == {"bookshop-cdc", "bookshop-iceberg"}
    for resource in connectors.values():
        text = json.dumps(resource.inputs["config"])
        assert "lab-" not in text, text  # no lab password or key in a connector config
        assert resource.inputs["connect_url"].startswith("http://127.0.0.1:")
    cdc = connectors["bookshop-cdc"].inputs["config"]
    assert cdc["database.password"] == "${env:LAKEHOUSE_BOOKSHOP_CDC_PASSWORD}"
    assert cdc["publication.autocreate.mode"] == "disabled" and cdc["slot.drop.on.stop"] == "false"
    assert connectors["bookshop-cdc"].inputs["reset_offsets_on_delete"] is True
    sink = connectors["bookshop-iceberg"].inputs["config"]
    assert sink["iceberg.control.commit.interval-ms"] == "10000"
    assert sink["iceberg.control.commit.timeout-ms"] == "15000"
    assert sink["iceberg.catalog.s3.secret-access-key"] == "${env:LAKEHOUSE_S3_SECRET_KEY}"
    assert sink["transforms.dbz.type"] == kafka_connect_config.DEBEZIUM_TRANSFORM
    assert connectors["bookshop-iceberg"].inputs["reset_offsets_on_delete"] is False


def test_the_cdc_source_comes_after_postgres_and_before_its_connector(native_run):
    source = native_run.of_type(SOURCE)[0]
    assert set(source.depends_on) == {"kafka-connect", "postgres"}
    cdc = next(r for r in native_run.of_type(CONNECTOR) if r.inputs["name"] == "bookshop-cdc")
    assert {"bookshop-cdc-source", "postgres"} <= set(cdc.depends_on)
    assert _secret_value(source.inputs["password"]) == "lab-postgres-password"
    assert _secret_value(source.inputs["params"]) == {"cdc_password": "lab-bookshop-cdc-password"}
    statements = source.inputs["apply"]
    assert statements[-1].startswith("SELECT pg_create_logical_replication_slot('bookshop_debezium', 'pgoutput')")
    assert any("REPLICA IDENTITY FULL" in s for s in statements)
    assert source.inputs["teardown"][0].startswith("SELECT pg_drop_replication_slot")


def test_outputs_carry_bootstrap_servers_connect_and_the_cdc_promise(native_run):
    profiles = native_run.outputs["profiles"]
    assert profiles["host"]["kafka"]["bootstrap.servers"].startswith("127.0.0.1:")
    assert profiles["services"]["kafka"]["bootstrap.servers"].startswith("127.0.0.1:")
    assert profiles["host"]["kafka_connect"]["url"].startswith("http://127.0.0.1:")
    streams = native_run.outputs["streams"]
    assert streams["cdc_visible_within_s"] == 60
    assert [c["name"] for c in streams["connectors"]] == ["bookshop-cdc", "bookshop-iceberg"]


# -- docker ------------------------------------------------------------------------------------------


def _envs(resource) -> dict[str, str]:
    return dict(e.split("=", 1) for e in _plain(resource.inputs["envs"]))


def image_properties(env: dict[str, str]) -> dict[str, str]:
    """What the apache/kafka image writes from KAFKA_* variables (KafkaDockerWrapper's rule)."""
    skip = {"KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
            "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
            "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME"}
    return {k.removeprefix("KAFKA_").lower().replace("_", ".").replace("...", "-").replace("..", "_"): v
            for k, v in env.items() if k.startswith("KAFKA_") and k not in skip}


def test_lab_kafka_writes_to_its_volume_with_one_node_transactions(lab_streams):
    broker = lab_streams.named("kafka")
    env = _envs(broker)
    props = image_properties(env)
    volume = broker.inputs["mounts"][0]
    assert volume["type"] == "volume" and props["log.dirs"] == volume["target"] == "/var/lib/kafka/data"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["share.coordinator.state.topic.replication.factor"] == "1"
    cluster = env["CLUSTER_ID"]
    assert len(cluster) == 22 and len(base64.urlsafe_b64decode(cluster + "==")) == 16
    assert env["KAFKA_HEAP_OPTS"] == "-Xmx512m"
    # The health check opens a socket: no second JVM inheriting the broker's heap.
    assert broker.inputs["healthcheck"]["tests"] == ["CMD-SHELL", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9092'"]


def test_the_images_variables_are_the_native_server_properties():
    from infra.config import load_stack

    spec = load_stack("lab")
    ctx = ServiceContext(spec, "kafka")
    props = kafka_config.broker_properties(ctx, "", "/data")
    assert image_properties({kafka_container.image_env_name(k): v for k, v in props.items()}) == props
    assert kafka_container.image_env_name("a_b-c.d") == "KAFKA_A__B___C_D"


def test_lab_connect_mounts_the_assembled_sink_next_to_the_images_debezium(lab_streams):
    worker = lab_streams.named("kafka-connect")
    assert worker.inputs["image"] == "sha256:kafka-connect-image"
    mount = worker.inputs["volumes"][0]  # a Binds entry (infra/targets/docker.py: never the Mounts API for binds)
    assert mount == {"hostPath": "/nonexistent/lakehouse-cache/kafka-connect",
                     "containerPath": "/kafka/connect/iceberg-kafka-connect", "readOnly": True}
    env = _envs(worker)
    assert env["CONNECT_PLUGIN_DISCOVERY"] == "service_load"
    assert env["CONNECT_CONFIG_PROVIDERS_ENV_CLASS"] == kafka_connect_config.ENV_PROVIDER
    assert env["OFFSET_FLUSH_INTERVAL_MS"] == "1000"
    assert env["BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert "CONNECT_PLUGIN_PATH" not in env  # the image's /kafka/connect
    assert _secret_value(worker.inputs["envs"])
    assert set(worker.depends_on) - {"book2-lab-state"} == {"kafka", "kafka-topics"}


def test_lab_topics_job_creates_every_topic_with_a_small_heap(lab_streams):
    job = lab_streams.named("kafka-topics")
    script = job.inputs["command"][0]
    for topic in ("orders", "bookshop.public.orders", "iceberg-control"):
        assert f"--topic {topic} " in script
    assert script.count("--if-not-exists") == 3
    assert _envs(job)["KAFKA_HEAP_OPTS"] == "-Xmx128m"
    assert job.inputs["entrypoints"] == ["/bin/bash", "-c"]


def test_lab_connectors_are_registered_through_the_published_port(lab_streams):
    connectors = {r.inputs["name"]: r for r in lab_streams.of_type(CONNECTOR)}
    assert {c.inputs["connect_url"] for c in connectors.values()} == {"http://localhost:8083"}
    assert connectors["bookshop-cdc"].inputs["config"]["database.hostname"] == "postgres"
    sink = connectors["bookshop-iceberg"].inputs["config"]
    assert sink["iceberg.catalog.uri"] == "http://catalog-gate:8182"  # through the gate, as the writer identity
    assert sink["iceberg.catalog.token"] == "${env:LAKEHOUSE_CATALOG_TOKEN_WRITER}"
    source = lab_streams.of_type(SOURCE)[0]
    assert (source.inputs["host"], source.inputs["port"]) == ("localhost", 5432)


# -- the steps' providers ------------------------------------------------------------------------


def test_serialized_step_providers_load_without_the_repository_on_the_path():
    from pulumi.dynamic.dynamic import serialize_provider

    from infra.services.kafka_connect import connectors, postgres_source

    for provider in (connectors.ConnectorProvider(), postgres_source.PostgresSourceProvider()):
        blob = serialize_provider(provider)
        assert blob == serialize_provider(type(provider)()), "deterministic, or every up shows a diff"
        code = ("import base64, sys, dill\n"
                "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
                "print(type(p).__name__)\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run([sys.executable, "-c", code], input=blob, cwd="/", env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [type(provider).__name__]
        assert base64.b64decode(blob)[:50].count(b"infra.targets") == 0


# -- the bookshop's seed, for real ---------------------------------------------------------------

SEED_MD5 = "72a7850a6c250344f21269e2b3e5f70e"  # md5 of the 60,000 rows as text, ordered by order_id


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@pytest.mark.skipif(_postgres_bin() is None or os.geteuid() != 0, reason="needs PostgreSQL server binaries and root")
def test_the_seed_is_sixty_thousand_deterministic_orders_and_the_setup_is_idempotent():
    import pwd

    import psycopg
    from psycopg import sql

    from infra.config import load_stack

    bindir = _postgres_bin()
    assert bindir is not None
    user = pwd.getpwnam("postgres")
    tmp_path = Path(tempfile.mkdtemp(prefix="lakehouse-seed-"))  # the postgres user must reach it (not pytest's 0700)
    os.chown(tmp_path, user.pw_uid, user.pw_gid)
    data = tmp_path / "pg"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    as_pg = {"user": user.pw_uid, "group": user.pw_gid}
    subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True, **as_pg)
    server = subprocess.Popen([str(bindir / "postgres"), "-D", str(data), "-c", "listen_addresses=127.0.0.1",
                               "-p", str(port), "-c", f"unix_socket_directories={tmp_path}", "-c", "wal_level=logical"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **as_pg)
    try:
        for _ in range(100):
            try:
                conn = psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                                       autocommit=True)
                break
            except psycopg.OperationalError:
                time.sleep(0.1)
        with conn:
            conn.execute("CREATE DATABASE bookshop")
        source = load_stack("native").streams.sources()[0]
        digests = []
        for _ in range(2):  # the second run changes nothing
            with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="bookshop",
                                 autocommit=True) as db:
                for statement in kafka_connect_cdc_source.source_statements(source):
                    db.execute(sql.SQL(statement).format(cdc_password=sql.Literal("it's secret")))
                digests.append(db.execute("SELECT count(*), md5(string_agg(o::text, E'\\n' ORDER BY order_id)) "
                                          "FROM public.orders o").fetchone())
                slots = db.execute("SELECT slot_name, plugin FROM pg_replication_slots").fetchall()
        assert digests == [(60000, SEED_MD5)] * 2
        assert slots == [("bookshop_debezium", "pgoutput")]
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="bookshop", autocommit=True) as db:
            for statement in kafka_connect_cdc_source.teardown_statements(source):
                db.execute(statement)
            left = db.execute("SELECT (SELECT count(*) FROM pg_replication_slots), (SELECT count(*) FROM "
                              "pg_publication), (SELECT count(*) FROM pg_roles WHERE rolname = 'bookshop_cdc'), "
                              "(SELECT count(*) FROM public.orders)").fetchone()
        assert left == (0, 0, 0, 60000)  # the slot, publication and role go; the orders stay
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(tmp_path, ignore_errors=True)
