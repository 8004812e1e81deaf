"""Flink job manager and task manager: the streaming writer, committing to Iceberg per checkpoint (compute).

Whole definition: defaults, the two containers (with Iceberg's Flink runtime jar from the
artifact cache mounted into lib/), and the lab artifact that provides that jar.
"""

from __future__ import annotations

from infra.artifacts import cache, maven
from infra.artifacts.recipe import Artifact, ArtifactRecipe
from infra.services.base import ContainerHost, ContainerPlan, ServiceContext, ServiceDefinition
from infra.spec import Target

JOBMANAGER = "flink-jobmanager"
TASKMANAGER = "flink-taskmanager"
ICEBERG_RUNTIME_JAR = "/opt/flink/lib/iceberg-flink-runtime.jar"
NOT_ON_AWS = "Flink is not offered on the aws target"
NOT_NATIVE = "the native target does not run Flink yet"

JOBMANAGER_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Flink job manager: schedules jobs and checkpoints",
    "version": "2.1.3",
    "image": "flink:2.1.3-java17",
    "ports": {"rest": {"internal": 8081, "external": 8081}, "rpc": {"internal": 6123}},
    "health": {"kind": "http", "port": "rest", "path": "/overview",
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8081/overview >/dev/null"]},
    "memory": "1280MiB",
    "depends_on": ["seaweedfs"],
}

TASKMANAGER_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Flink task manager: runs the streaming writer's tasks",
    "version": "2.1.3",
    "image": "flink:2.1.3-java17",
    "ports": {"data": {"internal": 6122}},
    "health": {"kind": "tcp", "port": "data", "command": ["CMD-SHELL", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/6122'"]},
    "memory": "1536MiB",
    "depends_on": [JOBMANAGER],
}


def flink_properties(ctx: ServiceContext, role: str) -> str:
    """FLINK_PROPERTIES for one role; process sizes stay inside the container's budget."""
    budget_mb = ctx.service.memory_bytes // (1024 * 1024)
    lines = [
        f"jobmanager.rpc.address: {JOBMANAGER}",
        "execution.checkpointing.interval: 10s",
        f"{'jobmanager' if role == 'jobmanager' else 'taskmanager'}.memory.process.size: {budget_mb - 128}m",
    ]
    if role == "taskmanager":
        lines.append("taskmanager.numberOfTaskSlots: 2")
    return "\n".join(lines)


def _plan(ctx: ServiceContext, host: ContainerHost, role: str) -> ContainerPlan:
    assert host.artifact is not None
    return ContainerPlan(
        command=[role],
        env={"FLINK_PROPERTIES": flink_properties(ctx, role)},
        upload_sources={ICEBERG_RUNTIME_JAR: str(host.artifact.path)},
    )


def jobmanager(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return _plan(ctx, host, "jobmanager")


def taskmanager(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return _plan(ctx, host, "taskmanager")


# -- lab artifact: Iceberg's Flink runtime jar ---------------------------------------------------


def runtime_coordinate(ctx: ServiceContext) -> maven.Coordinate:
    """Maven coordinates of Iceberg's Flink runtime for Flink ``major.minor``."""
    minor = ".".join(ctx.service.version.split(".")[:2])
    return maven.Coordinate("org.apache.iceberg", f"iceberg-flink-runtime-{minor}", ctx.spec.engines.iceberg)


def fetch_runtime(ctx: ServiceContext) -> Artifact:
    coordinate = runtime_coordinate(ctx)
    maven.fetch(coordinate)
    found = cache.lookup(coordinate.key)
    assert found is not None
    return found


RUNTIME = ArtifactRecipe(key=lambda ctx: runtime_coordinate(ctx).key, fetch=fetch_runtime,
                         source="Maven Central iceberg-flink-runtime")

SERVICES = (
    ServiceDefinition(
        name=JOBMANAGER, default=JOBMANAGER_DEFAULT, summary="Flink job manager (checkpoints, scheduling)",
        container=jobmanager, lab_artifact=RUNTIME,
        unavailable={Target.NATIVE: NOT_NATIVE, Target.AWS: NOT_ON_AWS},
    ),
    ServiceDefinition(
        name=TASKMANAGER, default=TASKMANAGER_DEFAULT, summary="Flink task manager (the writer's tasks)",
        container=taskmanager, lab_artifact=RUNTIME,
        unavailable={Target.NATIVE: NOT_NATIVE, Target.AWS: NOT_ON_AWS},
    ),
)
