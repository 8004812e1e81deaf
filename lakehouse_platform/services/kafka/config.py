"""Kafka's configuration on every target: the platform's topics, the broker's properties (KRaft, one node, two
listeners), its JVM flags and logging.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from lakehouse_platform.model import PlatformSpec, TopicSpec, parse_size
from lakehouse_platform.services.context import ServiceContext, Side, address
from lakehouse_platform.services.plans import IDLE_HEAP_FLAGS

KAFKA = "kafka"


def client_profile(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, str]:
    """Where clients reach the broker: on the host its HOST listener, next to the services its PLAINTEXT one."""
    listener = "host" if side is Side.EXTERNAL else "broker"
    return {"bootstrap.servers": address(spec, KAFKA, listener, side)}


def service_profiles(spec: PlatformSpec) -> dict[str, Any]:
    """Where the platform's services reach the broker (the ``profiles.services`` output)."""
    return {KAFKA: client_profile(spec, Side.INTERNAL)}


TOPICS_JOB = "kafka-topics"


#: The control topic every Iceberg sink coordinates its commits on (each sink has its own group prefix).
CONTROL_TOPIC = "iceberg-control"


def platform_topics(spec: PlatformSpec) -> list[TopicSpec]:
    """Every topic the deployment creates: the stack's, each source connector's, the sinks' control topic."""
    streams = spec.streams
    topics = {t.name: t for t in streams.topics}
    for topic in streams.topics_written():
        topics.setdefault(topic, TopicSpec(name=topic, partitions=1,
                                           doc="Debezium change events (JSON with schema) of one table"))
    if streams.sinks():
        topics.setdefault(CONTROL_TOPIC, TopicSpec(name=CONTROL_TOPIC, partitions=1,
                                                   doc="the Iceberg sinks' commit coordination"))
    return list(topics.values())


def topic_configs(topic: TopicSpec) -> dict[str, str]:
    configs = {"cleanup.policy": "compact" if topic.compact else "delete"}
    if topic.retention_hours:
        configs["retention.ms"] = str(topic.retention_hours * 3600 * 1000)
    return configs


def topics_json(spec: PlatformSpec) -> str:
    """The topics as the native post-start task reads them (one JSON document)."""
    return json.dumps([{"name": t.name, "partitions": t.partitions, "configs": topic_configs(t)}
                       for t in platform_topics(spec)], sort_keys=True)


def retention_properties(spec: PlatformSpec) -> dict[str, str]:
    """The broker's disk bounds (``streams``): how long and how much each partition keeps, in segments of a size;
    the same on every target (on aws the MSK configuration's)."""
    streams = spec.streams
    return {"log.retention.hours": str(streams.retention_hours),
            "log.retention.bytes": str(parse_size(streams.retention_bytes)),
            "log.segment.bytes": str(parse_size(streams.segment_bytes))}


def cluster_id(spec: PlatformSpec, stack: str) -> str:
    """A stable KRaft cluster id per platform and stack (22 characters of base64url, as Kafka's are)."""
    digest = hashlib.sha256(f"{spec.name}-{stack}-kafka".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def broker_properties(ctx: ServiceContext, bind_host: str, log_dir: str) -> dict[str, str]:
    """server.properties of the one node: broker and controller, every setting a one-node cluster needs.

    Two client listeners: PLAINTEXT for the platform's services (internal address), HOST for
    clients on the host (external address). Replication factors and min ISR are 1 for the internal
    topics; the transaction log's matter (the Iceberg sink commits with transactional producers,
    whose defaults, 3 and 2, never form on one node).
    """
    port = ctx.listen_port
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{ctx.address(KAFKA, 'controller', Side.INTERNAL)}",
        "listeners": f"PLAINTEXT://{bind_host}:{port('broker')},HOST://{bind_host}:{port('host')}"
                     f",CONTROLLER://{bind_host}:{port('controller')}",
        "advertised.listeners": f"PLAINTEXT://{ctx.address(KAFKA, 'broker', Side.INTERNAL)},"
                                f"HOST://{ctx.address(KAFKA, 'host', Side.EXTERNAL)}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": log_dir,
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "4",
        **retention_properties(ctx.spec),
    }


def jvm_flags(ctx: ServiceContext) -> list[str]:
    """Kafka's own JVM flags (G1 with short pauses), an explicit heap, no JMX port."""
    heap_mb = parse_size(ctx.service.heap or ctx.service.memory) // (1024 * 1024)
    return [f"-Xms{max(heap_mb // 4, 64)}m", f"-Xmx{heap_mb}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            *IDLE_HEAP_FLAGS, "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]


LOG4J2 = """\
# Console only: the native target appends stdout to the service's log.
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""
