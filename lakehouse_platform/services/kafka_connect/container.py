"""Kafka Connect on docker: Debezium's connect image, configured through its environment, the sink plugin mounted."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka_connect.config import jvm_flags, secret_env, worker_properties
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan

PLUGIN_DIR_IN_IMAGE = "/kafka/connect"  # the Debezium image's plugin.path: one subdirectory per plugin


#: Worker settings the Debezium image takes from dedicated variables rather than CONNECT_<KEY>.
IMAGE_VARIABLES = {"bootstrap.servers": "BOOTSTRAP_SERVERS", "group.id": "GROUP_ID",
                   "config.storage.topic": "CONFIG_STORAGE_TOPIC", "offset.storage.topic": "OFFSET_STORAGE_TOPIC",
                   "status.storage.topic": "STATUS_STORAGE_TOPIC",
                   "offset.flush.interval.ms": "OFFSET_FLUSH_INTERVAL_MS"}


def image_env_name(key: str) -> str:
    """The Debezium image's variable for a worker property: ``CONNECT_<KEY, . as _>`` (it lowercases, _ -> .)."""
    if "_" in key or "-" in key:
        raise ValueError(f"{key!r} cannot be set through the Debezium image's CONNECT_* variables")
    return IMAGE_VARIABLES.get(key) or "CONNECT_" + key.replace(".", "_").upper()


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The Debezium image (its own Debezium) with the Iceberg sink's directory mounted as a second plugin (the
    lab's built image has both plugins under the same plugin path)."""
    assert host.artifact is not None
    props = worker_properties(ctx, PLUGIN_DIR_IN_IMAGE, "")
    props["listeners"] = f"http://0.0.0.0:{ctx.listen_port('rest')}"
    # The image sets plugin.path itself (its entrypoint falls back to /kafka/connect).
    env = {image_env_name(k): v for k, v in props.items() if k != "plugin.path"}
    env.update({"HEAP_OPTS": " ".join(jvm_flags(ctx)[:2]), **secret_env(ctx)})
    if ctx.spec.lab_built:  # the lab's built image carries both plugin directories
        return ContainerPlan(env=env)
    return ContainerPlan(env=env, host_mounts={str(host.artifact.path): f"{PLUGIN_DIR_IN_IMAGE}/iceberg-kafka-connect"})
