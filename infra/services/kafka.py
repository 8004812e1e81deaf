"""Kafka (KRaft, one node) and Kafka Connect with Debezium: event streams and CDC (compute, streams).

Whole definition: defaults and the two containers. On aws Kafka is Amazon MSK (``aws.kafka_msk``).
"""

from __future__ import annotations

from infra.services.base import ContainerHost, ContainerPlan, ServiceContext, ServiceDefinition, Side, jvm_heap_flag
from infra.spec import Target

KAFKA = "kafka"
CONNECT = "kafka-connect"
NOT_NATIVE = "the native target does not run Kafka yet"

KAFKA_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "message broker in KRaft mode, no ZooKeeper",
    "version": "4.3.1",
    "image": "apache/kafka:4.3.1",
    "ports": {"broker": {"internal": 9092}, "host": {"internal": 9094, "external": 9094},
              "controller": {"internal": 9093}},
    "health": {"kind": "tcp", "port": "broker",
               "command": ["CMD-SHELL",
                           "/opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server 127.0.0.1:9092 >/dev/null"]},
    "memory": "1GiB",
    "heap": "512MiB",
}

CONNECT_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Kafka Connect with the Debezium PostgreSQL connector (change data capture)",
    "version": "3.6.2",
    "image": "quay.io/debezium/connect:3.6.2.Final",
    "ports": {"rest": {"internal": 8083, "external": 8083}},
    "health": {"kind": "http", "port": "rest", "path": "/",
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8083/ >/dev/null"]},
    "memory": "1GiB",
    "heap": "512MiB",
    "depends_on": [KAFKA, "postgres"],
}


def kafka(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Broker and controller in one process; an extra listener advertised to host clients."""
    ports = ctx.service.ports
    internal = ctx.address(KAFKA, "broker", Side.INTERNAL)
    external = ctx.address(KAFKA, "host", Side.EXTERNAL)
    return ContainerPlan(
        env={
            "KAFKA_NODE_ID": "1",
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_LISTENERS": f"PLAINTEXT://:{ports['broker'].internal},CONTROLLER://:{ports['controller'].internal},"
                               f"HOST://:{ports['host'].internal}",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{internal},HOST://{external}",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,HOST:PLAINTEXT",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@{KAFKA}:{ports['controller'].internal}",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_HEAP_OPTS": jvm_heap_flag(ctx.service),
        },
        volumes={"data": "/var/lib/kafka/data"},
    )


def connect(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(
        env={
            "BOOTSTRAP_SERVERS": ctx.address(KAFKA, "broker"),
            "GROUP_ID": "lakehouse-connect",
            "CONFIG_STORAGE_TOPIC": "connect_configs",
            "OFFSET_STORAGE_TOPIC": "connect_offsets",
            "STATUS_STORAGE_TOPIC": "connect_statuses",
            "HEAP_OPTS": jvm_heap_flag(ctx.service),
        },
    )


SERVICES = (
    ServiceDefinition(
        name=KAFKA, default=KAFKA_DEFAULT, summary="Kafka broker + controller (KRaft)", container=kafka,
        unavailable={Target.NATIVE: NOT_NATIVE,
                     Target.AWS: "on aws Kafka runs as Amazon MSK: set aws.kafka_msk: true instead"},
    ),
    ServiceDefinition(
        name=CONNECT, default=CONNECT_DEFAULT, summary="Kafka Connect with Debezium", container=connect,
        unavailable={Target.NATIVE: NOT_NATIVE,
                     Target.AWS: "on aws Debezium runs on MSK Connect: set aws.kafka_msk: true instead"},
    ),
)
