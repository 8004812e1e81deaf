"""Tables as code: what a stack declares about its tables, their owners and their promises."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakehouse_platform.model.base import Strict
from lakehouse_platform.model.layers import Layer
from lakehouse_platform.model.retention import SnapshotRetention

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
ColumnType = Literal["boolean", "int", "long", "float", "double", "decimal(10,2)", "decimal(38,2)", "date",
                     "timestamp", "timestamptz", "string", "uuid", "binary"]
Transform = Literal["identity", "year", "month", "day", "hour", "bucket", "truncate"]
MaintenanceAction = Literal["rewrite_data_files", "expire_snapshots", "rewrite_manifests", "remove_orphan_files"]
ALL_MAINTENANCE: tuple[MaintenanceAction, ...] = (
    "expire_snapshots", "rewrite_data_files", "rewrite_manifests", "remove_orphan_files")
#: The column types each partition transform takes (the Iceberg table spec, "Partition Transforms").
_TEMPORAL = ("date", "timestamp", "timestamptz")
TRANSFORM_TYPES: dict[str, tuple[str, ...]] = {
    "year": _TEMPORAL, "month": _TEMPORAL, "day": _TEMPORAL, "hour": ("timestamp", "timestamptz"),
    "bucket": ("int", "long", "decimal(10,2)", "decimal(38,2)", "date", "timestamp", "timestamptz", "string", "uuid",
               "binary"),
    "truncate": ("int", "long", "decimal(10,2)", "decimal(38,2)", "string", "binary"),
}
#: Table properties the platform writes from a declaration's typed fields (lakehouse_platform/runtime/tables.py).
TYPED_PROPERTIES = {"owner": "from the table's owner", "platform.freshness-minutes": "from its freshness_minutes",
                    "platform.maintenance": "from its maintenance", "platform.declared": "on every declared table"}


def _identifier(value: str, what: str) -> str:
    if not _IDENTIFIER.match(value):
        raise ValueError(f"{value!r} is not a {what}: lowercase letters, digits and _, starting with a letter or _")
    return value


class ColumnSpec(Strict):
    """One column of a declared table."""

    name: str = Field(description="Column name.")
    type: ColumnType = Field(description="Iceberg type.")
    required: bool = Field(default=False, description="NOT NULL.")
    doc: str = Field(default="", description="What the column holds.")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _identifier(value, "column name")


class PartitionFieldSpec(Strict):
    """One partition field: a transform of a source column."""

    source: str = Field(description="Source column.")
    transform: Transform = Field(default="identity", description="Partition transform.")
    width: int | None = Field(default=None, ge=1, description="Buckets (bucket) or width (truncate).")

    @model_validator(mode="after")
    def _width(self) -> PartitionFieldSpec:
        if self.transform in ("bucket", "truncate") and self.width is None:
            raise ValueError(f"a {self.transform} partition needs 'width'")
        if self.transform not in ("bucket", "truncate") and self.width is not None:
            raise ValueError(f"'width' applies to bucket and truncate, not {self.transform}")
        return self


class TableSpec(Strict):
    """A table the platform creates and watches: schema, partitioning, owner, freshness, maintenance."""

    LAYER: ClassVar[Layer] = Layer.ORCHESTRATION  # the layer its keys belong to (change review)

    namespace: str = Field(description="Namespace (database) of the table.")
    name: str = Field(description="Table name.")
    owner: str = Field(description="The team that answers for the table's contents and freshness.")
    freshness_minutes: int = Field(ge=1, description="Stale when its current snapshot is older than this.")
    columns: list[ColumnSpec] = Field(min_length=1, description="Schema, in order.")
    partition_by: list[PartitionFieldSpec] = Field(default_factory=list, description="Partition spec.")
    maintenance: list[MaintenanceAction] = Field(
        default_factory=lambda: list(ALL_MAINTENANCE),
        description="The maintenance actions the platform runs on this table (on the spec's schedules).",
    )
    properties: dict[str, str] = Field(default_factory=dict, description="Extra Iceberg table properties.")
    commit_interval_s: int | None = Field(
        default=None, ge=1, le=86_400,
        description="How often the table commits at most (its busiest writer), in seconds: its default "
                    "retention.keep_last is derived from it. Unset: table_defaults.commit_interval_s.")
    retention: SnapshotRetention = Field(default_factory=SnapshotRetention,
                                         description="How many snapshots the table keeps, for how long, and the "
                                                     "bounds its signals watch.")

    @field_validator("namespace", "name")
    @classmethod
    def _names(cls, value: str) -> str:
        return _identifier(value, "namespace or table name")

    @field_validator("owner")
    @classmethod
    def _owner(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("every declared table needs an owner: name the team that answers for it")
        return value.strip()

    @field_validator("properties")
    @classmethod
    def _untyped_properties(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if key in TYPED_PROPERTIES:
                raise ValueError(f"{key} is written by the platform {TYPED_PROPERTIES[key]} (it would replace this "
                                 "value); set the typed field instead")
        return value

    @model_validator(mode="after")
    def _partition_sources(self) -> TableSpec:
        columns = {c.name: c.type for c in self.columns}
        if len(columns) != len(self.columns):
            raise ValueError("columns: a column name appears twice")
        seen: set[tuple[str, str]] = set()
        for index, part in enumerate(self.partition_by):
            if part.source not in columns:
                raise ValueError(f"partition_by.{index}.source: {part.source!r} is not a column; "
                                 f"allowed: {', '.join(c.name for c in self.columns)}")
            allowed = TRANSFORM_TYPES.get(part.transform)
            if allowed is not None and columns[part.source] not in allowed:
                raise ValueError(f"partition_by.{index}.transform: {part.transform} does not apply to "
                                 f"{part.source!r}, a column of type {columns[part.source]} (Iceberg refuses it when "
                                 f"the table is created); {part.transform} takes {', '.join(allowed)}")
            if (part.source, part.transform) in seen:
                raise ValueError(f"partition_by.{index}: {part.transform}({part.source}) is listed twice")
            seen.add((part.source, part.transform))
        return self

    @property
    def identifier(self) -> str:
        return f"{self.namespace}.{self.name}"
