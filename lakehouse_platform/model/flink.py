"""The Flink cluster's settings and the streaming job the platform deploys on it (compute, streams)."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from lakehouse_platform.model.base import SIZE_HELP, Strict, parse_size
from lakehouse_platform.model.layers import Layer
from lakehouse_platform.model.retention import SnapshotRetention

_TABLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}\.[a-z_][a-z0-9_]{0,62}$")
_JOB_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


class FlinkJobSpec(Strict):
    """The streaming writer: orders from a stream into an Iceberg table, one commit per checkpoint."""

    name: str = Field(default="lakehouse-orders-stream",
                      description="Flink job name: the job is found (and adopted) by it, and its state lives under it.")
    checkpoint_interval_s: int = Field(
        default=10, ge=1, le=3600,
        description="Seconds between checkpoints; the Iceberg sink commits once per completed checkpoint.")
    source: Literal["auto", "generator", "kafka"] = Field(  # not the service: kafka is the orders topic as source
        default="auto",
        description="Where orders come from: kafka (the orders topic), generator (a checkpointed generator), "
                    "or auto (kafka when the kafka service is enabled, else generator).")
    table: str = Field(default="streams.orders", description="Target Iceberg table, namespace.name.")
    rows_per_second: int = Field(default=20, ge=1, le=100_000, description="Generator rate (source generator).")
    kafka_topic: str = Field(default="orders", min_length=1, description="Topic of JSON orders (source kafka).")
    kafka_group: str = Field(default="lakehouse-flink", min_length=1,
                             description="Consumer group; offsets are committed with each checkpoint.")
    parallelism: int = Field(default=1, ge=1, le=64, description="Job parallelism (at most flink.task_slots).")
    retention: SnapshotRetention = Field(
        default_factory=SnapshotRetention,
        description="Snapshot retention of the job's table (it commits once per checkpoint: keep_last is derived "
                    "from checkpoint_interval_s).")
    restore: Literal["latest", "none"] = Field(
        default="latest",
        description="latest: a (re)submitted job resumes from the newest savepoint or retained checkpoint of its "
                    "lineage (job name, table, source), so a redeploy is exactly-once; none: always start fresh.")

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        if not _TABLE.match(value):
            raise ValueError(f"{value!r} is not namespace.name: lowercase letters, digits and _, e.g. streams.orders")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _JOB_NAME.match(value):
            raise ValueError(f"{value!r} is not a job name: lowercase letters, digits and -, starting with a letter")
        return value

    @property
    def namespace(self) -> str:
        return self.table.split(".", 1)[0]

    @property
    def table_name(self) -> str:
        return self.table.split(".", 1)[1]


class FlinkSpec(Strict):
    """Flink's cluster settings (memory is each manager's service budget) and its streaming job."""

    LAYER: ClassVar[Layer] = Layer.COMPUTE  # the layer its keys belong to (change review)

    task_slots: int = Field(default=2, ge=1, le=64,
                            description="Slots of the task manager (taskmanager.numberOfTaskSlots).")
    managed_fraction: float = Field(
        default=0.1, ge=0.0, le=0.9,
        description="taskmanager.memory.managed.fraction; the default 0.4 leaves a 1 GB task manager a 26 MB task "
                    "heap, 0.1 leaves about 200 MB (the heap-backed state backend uses no managed memory).")
    process_headroom: str = Field(
        default="256MiB",
        description="Budget minus this is each manager's Flink process size "
                    f"(jobmanager/taskmanager.memory.process.size): {SIZE_HELP}.")
    retained_checkpoints: int = Field(
        default=2, ge=1, le=100,
        description="execution.checkpointing.num-retained: completed checkpoints kept (older ones are deleted); a "
                    "restore needs one, a second covers one that turns out unreadable.")
    job: FlinkJobSpec = Field(default_factory=FlinkJobSpec, description="The streaming job the platform deploys.")

    @field_validator("process_headroom")
    @classmethod
    def _headroom(cls, value: str) -> str:
        parse_size(value)
        return value

    @property
    def headroom_bytes(self) -> int:
        return parse_size(self.process_headroom)
