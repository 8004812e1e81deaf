"""What one refresh learns: a table's state and files, the last catalog and service checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: A table property tables-as-code writes with the declared promise (minutes).
FRESHNESS_PROPERTY = "platform.freshness-minutes"
#: The table property naming the team that answers for a table (tables-as-code writes it; anyone may set it).
OWNER_PROPERTY = "owner"


@dataclass(frozen=True)
class FileStats:
    """Live files of one manifest (or of a whole snapshot, summed)."""

    data_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    small_data_files: int = 0
    data_bytes: int = 0
    records: int = 0

    def __add__(self, other: FileStats) -> FileStats:
        return FileStats(*(a + b for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[int, ...]:
        return (self.data_files, self.position_delete_files, self.equality_delete_files, self.small_data_files,
                self.data_bytes, self.records)

    @property
    def delete_files(self) -> int:
        return self.position_delete_files + self.equality_delete_files


@dataclass
class TableState:
    """What the exporter knows about one table."""

    namespace: str
    name: str
    declared: bool
    owner: str
    freshness_s: float
    retention_s: float
    exists: bool = True
    error: str | None = None
    last_data_commit: float | None = None  # epoch seconds of the last commit that was not a replace
    created: float | None = None  # when the table's metadata was first written (for a table never written)
    snapshots: int = 0
    oldest_snapshot: float | None = None
    snapshot_id: int | None = None
    manifests: int = 0
    files: FileStats = field(default_factory=FileStats)
    max_snapshots: int = 0  # the bounds its config declares (0: none)
    max_metadata_bytes: int = 0
    metadata_location: str | None = None
    metadata_bytes: int | None = None  # the current metadata.json's size
    load_seconds: float | None = None  # the last load-table: catalog round trip and metadata.json parsed

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


@dataclass
class Probe:
    """The last catalog and service checks."""

    catalog_up: bool = False
    config_seconds: float | None = None
    load_seconds: float | None = None
    services: dict[str, bool] = field(default_factory=dict)
    supervisors: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Disks:
    """The last measure of each service's state on disk, and of the database's replication slots."""

    state_bytes: dict[str, int] = field(default_factory=dict)  # service -> bytes its data dir takes on disk
    measured_at: float | None = None
    #: slot -> (bytes of WAL it holds back, whether a consumer is attached, wal_status)
    slots: dict[str, tuple[int, bool, str]] = field(default_factory=dict)


def ident(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def last_data_commit(snapshots: list[Any]) -> float | None:
    """Epoch seconds of the newest snapshot that changed data: a ``replace`` (compaction, manifest rewrites)
    rewrites what is there and says nothing about freshness."""
    data = [s.timestamp_ms / 1000 for s in snapshots if s.summary is None or s.summary.operation.value != "replace"]
    return max(data) if data else None
