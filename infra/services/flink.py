"""Flink job manager and task manager: the streaming writer, committing to Iceberg per checkpoint (compute)."""

from __future__ import annotations

from infra.services.base import ContainerPlan, ServiceContext

JOBMANAGER = "flink-jobmanager"
TASKMANAGER = "flink-taskmanager"
ICEBERG_RUNTIME_JAR = "/opt/flink/lib/iceberg-flink-runtime.jar"

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


def _plan(ctx: ServiceContext, role: str, runtime_jar: str) -> ContainerPlan:
    return ContainerPlan(
        command=[role],
        env={"FLINK_PROPERTIES": flink_properties(ctx, role)},
        upload_sources={ICEBERG_RUNTIME_JAR: runtime_jar},
    )


def jobmanager(ctx: ServiceContext, runtime_jar: str) -> ContainerPlan:
    return _plan(ctx, "jobmanager", runtime_jar)


def taskmanager(ctx: ServiceContext, runtime_jar: str) -> ContainerPlan:
    return _plan(ctx, "taskmanager", runtime_jar)
