"""Kafka: one KRaft node on loopback natively, the image's variables on docker (the same server properties), MSK on aws;
the programs under Pulumi mocks."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka import config as kafka_config
from lakehouse_platform.services.kafka import container as kafka_container
from tests.support.aws_graph import the
from tests.support.harness import ProgramRun
from tests.support.rendered import envs, local_service, plain, properties


def test_native_kafka_is_one_kraft_node_on_loopback_with_its_data_under_the_stack_state(native_run):
    broker = local_service(native_run, "kafka")
    argv = broker.inputs["argv"]
    assert "-Xmx320m" in argv and argv[-2:][0] == "kafka.Kafka"
    files = {Path(k).name: v for k, v in plain(broker.inputs["files"]).items()}
    props = properties(files["server.properties"])
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
    assert topics_step[2:4] == ["lakehouse_platform.runtime.tasks", "create-topics"]
    topics = {t["name"]: t for t in json.loads(topics_step[-1])}
    assert set(topics) == {"orders", "bookshop.public.orders", "iceberg-control"}


def test_native_kafka_drains_the_change_captures_sources_before_it_restarts_and_resumes_them_after(native_run):
    """An at-least-once source would produce again what it produced since its last offset flush (the upgrade from
    0.3.0 doubled CDC events in a CI rehearsal): the broker's update stops the sources first, through Connect."""
    broker = local_service(native_run, "kafka")
    connect = native_run.outputs["profiles"]["host"]["kafka_connect"]["url"]
    marker = str(Path(broker.inputs["data_dir"]) / "connect-drained.json")
    drain = ["-m", "lakehouse_platform.services.kafka_connect.runtime"]
    assert [step[1:] for step in broker.inputs["pre_stop"]] == [[*drain, "stop", connect, marker, "60"]]
    assert broker.inputs["post_start"][-1][1:] == [*drain, "resume", connect, marker, "60"]


def test_without_a_change_capture_the_broker_drains_nothing() -> None:
    from lakehouse_platform.config import stack_platform
    from tests.support.harness import cached_run

    platform = stack_platform("native")
    platform["services"]["kafka-connect"] = {"enabled": False}
    platform.setdefault("streams", {})["connectors"] = []
    broker = local_service(cached_run("native", platform), "kafka")
    assert broker.inputs.get("pre_stop") in (None, [])
    assert all("kafka_connect.runtime" not in " ".join(step) for step in broker.inputs["post_start"])


# -- docker --------------------------------------------------------------------------------------------------


def image_properties(env: dict[str, str]) -> dict[str, str]:
    """What the apache/kafka image writes from KAFKA_* variables (KafkaDockerWrapper's rule)."""
    skip = {"KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
            "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
            "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME"}
    return {k.removeprefix("KAFKA_").lower().replace("_", ".").replace("...", "-").replace("..", "_"): v
            for k, v in env.items() if k.startswith("KAFKA_") and k not in skip}


def test_lab_kafka_writes_to_its_volume_with_one_node_transactions(lab_run):
    broker = lab_run.named("kafka")
    env = envs(broker)
    props = image_properties(env)
    volume = broker.inputs["mounts"][0]
    assert volume["type"] == "volume" and props["log.dirs"] == volume["target"] == "/var/lib/kafka/data"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["share.coordinator.state.topic.replication.factor"] == "1"
    cluster = env["CLUSTER_ID"]
    assert len(cluster) == 22 and len(base64.urlsafe_b64decode(cluster + "==")) == 16
    assert env["KAFKA_HEAP_OPTS"] == "-Xmx320m"
    # The health check opens a socket: no second JVM inheriting the broker's heap.
    assert broker.inputs["healthcheck"]["tests"] == ["CMD-SHELL", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9092'"]


def test_the_images_variables_are_the_native_server_properties():
    from tests.support.stacks import spec_of

    spec = spec_of("lab")
    ctx = ServiceContext(spec, "kafka")
    props = kafka_config.broker_properties(ctx, "", "/data")
    assert image_properties({kafka_container.image_env_name(k): v for k, v in props.items()}) == props
    assert kafka_container.image_env_name("a_b-c.d") == "KAFKA_A__B___C_D"


def test_lab_topics_job_creates_every_topic_with_a_small_heap(lab_run):
    job = lab_run.named("kafka-topics")
    script = job.inputs["command"][0]
    for topic in ("orders", "bookshop.public.orders", "iceberg-control"):
        assert f"--topic {topic} " in script
    assert script.count("--if-not-exists") == 3
    assert envs(job)["KAFKA_HEAP_OPTS"] == "-Xmx128m"
    assert job.inputs["entrypoints"] == ["/bin/bash", "-c"]


# -- aws -----------------------------------------------------------------------------------------------------


def test_kafka_is_msk_with_debezium_on_msk_connect(streaming: ProgramRun) -> None:
    cluster = the(streaming, "aws:msk/cluster:Cluster").inputs
    assert cluster["numberOfBrokerNodes"] == 2
    assert cluster["clientAuthentication"] == {"sasl": {"iam": True}, "unauthenticated": False}
    assert len(cluster["brokerNodeGroupInfo"]["clientSubnets"]) == 2
    connectors = {r.name: r.inputs for r in streaming.of_type("aws:mskconnect/connector:Connector")}
    assert set(connectors) == {"lakehouse-bookshop-cdc", "lakehouse-bookshop-iceberg"}  # the stack's streams.connectors
    cdc = connectors["lakehouse-bookshop-cdc"]["connectorConfiguration"]
    assert cdc["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert cdc["database.hostname"] == "postgres.lakehouse.internal"
    assert cdc["publication.name"] == "bookshop_cdc" and cdc["publication.autocreate.mode"] == "disabled"
    sink = connectors["lakehouse-bookshop-iceberg"]["connectorConfiguration"]
    assert sink["iceberg.catalog.uri"] == "http://polaris.lakehouse.internal:8181/api/catalog"
    # The writer identity's own Polaris principal, never Polaris's root.
    assert sink["iceberg.catalog.credential"] == "writer:${secretsmanager:lakehouse-polaris-client-secret-writer:value}"
    assert sink["iceberg.kafka.sasl.mechanism"] == "AWS_MSK_IAM"  # the sink's own control-topic clients
    topics = {r.inputs["name"]: r.inputs for r in streaming.of_type("aws:msk/topic:Topic")}
    assert set(topics) == {"orders", "bookshop.public.orders", "iceberg-control"}
    assert {t["replicationFactor"] for t in topics.values()} == {2}


def test_each_kafka_version_has_its_own_runtime_lock_and_an_unlocked_one_is_refused() -> None:
    """The version-bump test moves a broker from 4.3.0 to the pin: each version's classpath is its own lock, the
    two differ in Kafka's modules only, and a version without a lock is refused naming the key."""
    import pytest

    from lakehouse_platform.artifacts.artifact import ArtifactError
    from lakehouse_platform.services.kafka import artifact

    locks = {version: artifact.lock(version) for version in artifact.LOCKS}
    assert {v: artifact.locked_version(lk, "kafka_2.13") for v, lk in locks.items()} == {v: v for v in locks}
    assert artifact.lock().digest() == locks["4.3.1"].digest()
    older, pinned = ({(j.coordinate.group, j.coordinate.artifact): j.coordinate.version for j in locks[v].jars}
                     for v in ("4.3.0", "4.3.1"))
    assert older.keys() == pinned.keys()
    assert {k[0] for k in older if older[k] != pinned[k]} == {"org.apache.kafka"}
    with pytest.raises(ArtifactError, match=r"services\.kafka\.version: no runtime jar lock for Kafka 4\.2\.0"):
        artifact.lock("4.2.0")
