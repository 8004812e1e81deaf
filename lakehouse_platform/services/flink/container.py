"""Flink on docker: the ``flink`` image's managers with ``FLINK_PROPERTIES``, the jars an Iceberg job on S3 needs
uploaded into ``/opt/flink/lib``, checkpoints on a bind mount both managers share (handed to uid 9999 by a job).
"""

from __future__ import annotations

from lakehouse_platform.artifacts import maven
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.flink.artifact import JAR_LOCK
from lakehouse_platform.services.flink.config import JOBMANAGER, TASKMANAGER, aws_env, flink_config
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan

# -- the lab (docker) -----------------------------------------------------------------------------
IMAGE_LIB = "/opt/flink/lib"


FLINK_UID = "9999:9999"  # the flink image's user (its Dockerfile: useradd --uid=9999)


LAB_STATE = "/flink-state"  # checkpoints and savepoints, shared by both managers


LAB_STATE_HOST_DIR = "flink/state"  # its host directory, under the stack's state


def lab_jars(ctx: ServiceContext) -> list[maven.LockedJar]:
    """The lock's jars a container needs in /opt/flink/lib: all of them, so the cluster runs either source."""
    return list(JAR_LOCK.jars)


def _container(ctx: ServiceContext, host: ContainerHost, role: str) -> ContainerPlan:
    """The upstream image gets the locked jars uploaded into its lib/; the lab's built image has them already."""
    assert host.artifact is not None
    ext = host.artifact.path / "ext"
    built = ctx.spec.lab_built
    return ContainerPlan(
        command=[role],
        env={"FLINK_PROPERTIES": flink_properties(ctx, role), **aws_env(ctx.spec)},
        upload_sources={} if built else {f"{IMAGE_LIB}/{j.coordinate.filename}": str(ext / j.coordinate.filename)
                                         for j in lab_jars(ctx)},
        bind_mounts={LAB_STATE_HOST_DIR: LAB_STATE},
    )


def jobmanager(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return _container(ctx, host, "jobmanager")


def taskmanager(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return _container(ctx, host, "taskmanager")


def state_init(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Runs as root once: the shared checkpoint directory, owned by the image's user."""
    return ContainerPlan(
        entrypoint=["sh", "-c"],
        command=[f"mkdir -p {LAB_STATE}/checkpoints {LAB_STATE}/savepoints && chown -R {FLINK_UID} {LAB_STATE}"],
        bind_mounts={LAB_STATE_HOST_DIR: LAB_STATE},
        user="0:0",
    )


def flink_properties(ctx: ServiceContext, role: str) -> str:
    """FLINK_PROPERTIES: ``key: value`` lines the image's entrypoint writes into its config.yaml.

    The entrypoint deletes every whitespace character of a line before splitting it at the first
    colon, so no value may hold a space (none does).
    """
    config = flink_config(ctx, role, f"file://{LAB_STATE}", "0.0.0.0", JOBMANAGER, TASKMANAGER)  # noqa: S104
    for key, value in config.items():
        assert not any(ch.isspace() for ch in str(value)), f"{key}: the entrypoint would strip {value!r}"
    return "\n".join(f"{key}: {value}" for key, value in config.items())
