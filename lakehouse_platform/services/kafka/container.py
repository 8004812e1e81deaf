"""Kafka on docker: the ``apache/kafka`` image configured through its environment, and the topics job."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka.config import (
    KAFKA,
    broker_properties,
    cluster_id,
    platform_topics,
    topic_configs,
)
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, jvm_heap_flag

IMAGE_HOME = "/opt/kafka"


DATA_DIR_IN_IMAGE = "/var/lib/kafka/data"  # the image's VOLUME


def image_env_name(key: str) -> str:
    """The apache/kafka image's variable for a property: ``_`` -> ``__``, ``-`` -> ``___``, ``.`` -> ``_``.

    With no mounted server.properties the image writes **only** the env-derived properties, so every
    key the broker needs must be one (``log.dirs`` too: its default is /tmp/kafka-logs).
    """
    return "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The image's env-only configuration: the same properties as natively, data on the image's volume."""
    props = broker_properties(ctx, "", DATA_DIR_IN_IMAGE)  # an empty host binds every interface of the container
    env = {image_env_name(key): value for key, value in props.items()}
    env.update({"CLUSTER_ID": cluster_id(ctx.spec, host.state_dir.name), "KAFKA_HEAP_OPTS": jvm_heap_flag(ctx.service)})
    return ContainerPlan(env=env, volumes={"data": DATA_DIR_IN_IMAGE})


def topics_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Creates each platform topic with the image's kafka-topics.sh (``--if-not-exists``: idempotent)."""
    bootstrap = ctx.address(KAFKA, "broker")
    lines = ["set -e"]
    for topic in platform_topics(ctx.spec):
        configs = " ".join(f"--config {k}={v}" for k, v in topic_configs(topic).items())
        lines.append(f"{IMAGE_HOME}/bin/kafka-topics.sh --bootstrap-server {bootstrap} --create --if-not-exists "
                     f"--topic {topic.name} --partitions {topic.partitions} --replication-factor 1 {configs}")
    # Every kafka-topics.sh is a JVM: a small heap of its own, not the broker's.
    return ContainerPlan(entrypoint=["/bin/bash", "-c"], command=["\n".join(lines)],
                         env={"KAFKA_HEAP_OPTS": "-Xmx128m"})
