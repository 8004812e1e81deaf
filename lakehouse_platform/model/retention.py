"""How long a table keeps its history: snapshot expiry by count and by age, fitted to how often the table commits.

A table that commits every ``c`` seconds and whose expiry runs at most every ``g`` seconds gains about
``g / c`` snapshots between two runs. Expiry keeps the newest ``keep_last`` snapshots (and none older
than ``max_age_hours``), so its count never passes ``keep_last + g / c``: the default ``keep_last`` is
``max_snapshots`` less one and a half such gaps, and a table whose gap alone passes ``max_snapshots`` is
refused (run expiry more often, or allow more snapshots). ``max_snapshots`` and ``max_metadata_size`` are
the bounds the table's signals are checked against (``SnapshotCountHigh``, ``MetadataTooLarge``).

Every metadata.json holds every kept snapshot (about 1 KiB each) and is rewritten by every commit and parsed
by every reader, so the count bounds the commit path and planning as much as the disk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from pydantic import Field, model_validator

from lakehouse_platform.model.base import SIZE_HELP, Size, Strict, parse_size
from lakehouse_platform.model.layers import Layer

#: What one kept snapshot adds to metadata.json, at most, as measured (the Flink job's: 1.1 KB; PyIceberg
#: appends: 0.6 KB), with room; and what the rest of it holds (schemas, specs, the metadata log, refs).
SNAPSHOT_METADATA_BYTES = 2048
METADATA_BASE_BYTES = 64 * 1024
#: Expiry's share of the run gap in the default keep_last: a run that starts late or is skipped once (its
#: previous run still going) still leaves the count under max_snapshots.
GAP_ALLOWANCE = 1.5


class SnapshotRetention(Strict):
    """How many snapshots a table keeps and for how long, and the bounds its signals watch (its keys belong to
    the layer of what it is set under: a declared table's, the streams', table_defaults')."""

    max_snapshots: int = Field(
        default=500, ge=2, le=100_000,
        description="The most snapshots the table holds: expiry keeps keep_last, so the count stays under this "
                    "between two runs, and SnapshotCountHigh fires above it.")
    keep_last: int | None = Field(
        default=None, ge=1, le=100_000,
        description="Expiry keeps the newest keep_last snapshots and expires older ones whatever their age. "
                    "Default: max_snapshots less 1.5x the commits the table makes between two runs of its "
                    "expire_snapshots job (its commit interval and the job's schedule), or half of "
                    "max_snapshots when the table's commit interval is unknown.")
    max_age_hours: int = Field(
        default=168, ge=1, le=87_600,
        description="Expiry also expires snapshots older than this (the time-travel window), however few remain "
                    "(never the current one); written as the table property history.expire.max-snapshot-age-ms, "
                    "which other engines' expiry reads.")
    max_metadata_size: Size | None = Field(
        default=None,
        description=f"The largest metadata.json the table may have ({SIZE_HELP}); MetadataTooLarge fires above "
                    "it. Default: 2 KiB per snapshot of max_snapshots plus 64 KiB.")

    @model_validator(mode="after")
    def _keep_within_bound(self) -> SnapshotRetention:
        if self.keep_last is not None and self.keep_last >= self.max_snapshots:
            raise ValueError(f"keep_last: {self.keep_last} is not below max_snapshots {self.max_snapshots}; the count "
                             "grows past keep_last between two runs of expiry: keep fewer, or allow more")
        return self

    @property
    def max_metadata_bytes(self) -> int:
        if self.max_metadata_size is not None:
            return parse_size(self.max_metadata_size)
        return self.max_snapshots * SNAPSHOT_METADATA_BYTES + METADATA_BASE_BYTES


class TableDefaults(Strict):
    """What the platform sets on every table it creates, and the catalog's defaults for tables engines create.

    The table properties below go on every declared table, on the streams' tables when their writers create
    them, and into the catalog's own defaults (the REST fixture's ``table-default.*``) where the catalog has
    them, so a table an engine creates gets them too.
    """

    LAYER: ClassVar[Layer] = Layer.ORCHESTRATION  # the layer its keys belong to (change review)

    commit_interval_s: int | None = Field(
        default=None, ge=1, le=86_400,
        description="How often a table no declaration or stream describes commits, at most (seconds): its "
                    "default keep_last is derived from it. Unset: unknown (keep_last defaults to half of "
                    "max_snapshots, and SnapshotCountHigh tells when that is not enough).")
    retention: SnapshotRetention = Field(default_factory=SnapshotRetention,
                                         description="Snapshot retention of tables no declaration or stream covers.")
    metadata_versions_kept: int = Field(
        default=100, ge=1, le=10_000,
        description="write.metadata.previous-versions-max: old metadata.json files kept after a commit (the rest "
                    "are deleted, write.metadata.delete-after-commit.enabled).")
    manifest_merge_min_count: int = Field(
        default=100, ge=2, le=10_000,
        description="commit.manifest.min-count-to-merge: an append merges its manifests once this many pile up "
                    "(commit.manifest-merge.enabled is set: PyIceberg merges only when a table says so).")
    commit_retries: int = Field(
        default=20, ge=0, le=1000,
        description="commit.retry.num-retries: how often the JVM writers (Flink, the Iceberg sink, Trino's "
                    "maintenance) retry a commit that lost a race before failing.")
    commit_retry_min_wait_ms: int = Field(
        default=100, ge=1, le=600_000,
        description="commit.retry.min-wait-ms: the first wait before a retried commit (it doubles).")
    commit_retry_max_wait_ms: int = Field(
        default=10_000, ge=1, le=3_600_000,
        description="commit.retry.max-wait-ms: the longest wait between two retries of a commit.")

    @model_validator(mode="after")
    def _waits(self) -> TableDefaults:
        if self.commit_retry_max_wait_ms < self.commit_retry_min_wait_ms:
            raise ValueError(f"commit_retry_max_wait_ms: {self.commit_retry_max_wait_ms} is shorter than "
                             f"commit_retry_min_wait_ms {self.commit_retry_min_wait_ms}; the wait starts at the "
                             "minimum and doubles up to the maximum")
        return self

    def properties(self) -> dict[str, str]:
        """The Iceberg table properties these defaults are (the retention's age is per table: ``TableBounds``)."""
        return {
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": str(self.metadata_versions_kept),
            "commit.manifest-merge.enabled": "true",
            "commit.manifest.min-count-to-merge": str(self.manifest_merge_min_count),
            "commit.retry.num-retries": str(self.commit_retries),
            "commit.retry.min-wait-ms": str(self.commit_retry_min_wait_ms),
            "commit.retry.max-wait-ms": str(self.commit_retry_max_wait_ms),
        }


@dataclass(frozen=True)
class TableBounds:
    """One table's retention as it runs: counts, ages in real seconds, and where its settings come from."""

    identifier: str
    owner: str
    key: str  # the config key its retention is set under (tables.0.retention, flink.job.retention, ...)
    commit_interval_s: int | None
    max_snapshots: int
    keep_last: int
    max_age_s: float
    max_metadata_bytes: int
    #: Snapshots the table gains between two runs of its expiry (None: no expire job covers it, or its rate is
    #: unknown).
    commits_between_runs: int | None
    #: The longest real gap between two runs of the expire job covering it (None: no expire job does).
    expiry_gap_s: float | None = None
    #: Why this retention cannot hold the table's write rate ("<key>: ..."), None when it can.
    problem: str | None = None

    def properties(self) -> dict[str, str]:
        """The Iceberg properties that carry this retention to other engines' expiry."""
        return {"history.expire.max-snapshot-age-ms": str(int(self.max_age_s * 1000))}


def bounds(identifier: str, owner: str, key: str, retention: SnapshotRetention, commit_interval_s: int | None,
           expiry_gap_s: float | None, age_ceiling_s: float | None, speedup: int) -> TableBounds:
    """A table's retention resolved: defaults derived, ages divided by the maintenance clock's speedup.

    ``expiry_gap_s`` is the longest real gap between two runs of the expire job covering the table (None: none
    does); ``age_ceiling_s`` the job's own ``older_than_days`` where it sets one. A table that gains more
    snapshots between two runs than its retention allows has a ``problem`` naming ``key`` (the spec refuses it).
    """
    between = math.ceil(expiry_gap_s / commit_interval_s) if expiry_gap_s and commit_interval_s else None
    problem = None
    if retention.keep_last is not None:
        keep = retention.keep_last
        if between is not None and keep + between > retention.max_snapshots:
            problem = (f"{key}.keep_last: {identifier} commits every {commit_interval_s} s, {between} times between "
                       f"two runs of expire_snapshots (at most {expiry_gap_s:g} s apart): keep_last {keep} plus "
                       f"those pass max_snapshots {retention.max_snapshots}; lower keep_last, raise max_snapshots, "
                       "or run expire_snapshots more often (its maintenance schedule)")
    elif between is not None:
        keep = retention.max_snapshots - math.ceil(GAP_ALLOWANCE * between)
        if keep < 1:
            keep = 1
            problem = (f"{key}.max_snapshots: {identifier} commits every {commit_interval_s} s, {between} times "
                       f"between two runs of expire_snapshots (at most {expiry_gap_s:g} s apart), which max_snapshots "
                       f"{retention.max_snapshots} cannot hold with room for a late run ({GAP_ALLOWANCE:g}x); run "
                       "expire_snapshots more often (its maintenance schedule), or raise max_snapshots to at least "
                       f"{math.ceil(GAP_ALLOWANCE * between) + 1}")
    else:
        keep = max(1, retention.max_snapshots // 2)
    age_s = retention.max_age_hours * 3600.0
    if age_ceiling_s is not None:
        age_s = min(age_s, age_ceiling_s)
    return TableBounds(identifier=identifier, owner=owner, key=key, commit_interval_s=commit_interval_s,
                       max_snapshots=retention.max_snapshots, keep_last=keep, max_age_s=age_s / speedup,
                       max_metadata_bytes=retention.max_metadata_bytes, commits_between_runs=between,
                       expiry_gap_s=expiry_gap_s, problem=problem)
