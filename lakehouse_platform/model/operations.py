"""The operating layers' promises: maintenance schedules, recovery objectives, freshness and alarms."""

from __future__ import annotations

import math
from typing import ClassVar, Literal

from pydantic import EmailStr, Field, field_validator, model_validator

from lakehouse_platform.model.base import SIZE_HELP, Strict, parse_size
from lakehouse_platform.model.layers import Layer
from lakehouse_platform.runtime.cron import CronError, cron_max_interval_minutes, eventbridge_expression, parse_cron

__all__ = ["MaintenanceJob", "ObservabilitySpec", "RecoverySpec", "cron_max_interval_minutes", "cron_problem",
           "eventbridge_cron"]


def cron_problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a cron expression the platform runs (crontab(5), UTC), or None.

    Parsed by ``lakehouse_platform.runtime.cron``, the one parser the scheduler and the aws target use too, so
    what is accepted here is what runs, on every target.
    """
    try:
        parse_cron(schedule)
    except CronError as exc:
        return str(exc)
    return None


def eventbridge_cron(schedule: str) -> str:
    """A five-field cron (crontab(5), UTC) as an EventBridge Scheduler ``cron()``; ``ValueError`` if it has none."""
    return eventbridge_expression(parse_cron(schedule))


class MaintenanceJob(Strict):
    """A maintenance task scheduled by the platform (orchestration layer)."""

    LAYER: ClassVar[Layer] = Layer.ORCHESTRATION  # the layer its keys belong to (change review)

    action: Literal["rewrite_data_files", "expire_snapshots", "rewrite_manifests", "remove_orphan_files"] = Field(
        description="The Iceberg maintenance action, run as its Trino procedure on every table in scope.")
    schedule: str = Field(description="Cron expression (crontab(5), UTC), e.g. '0 3 * * *'; weekday 0 and 7 are "
                                      "Sunday, month and weekday names allowed.")
    older_than_days: int | None = Field(
        default=None, ge=1, le=3650,
        description="remove_orphan_files: its safety margin, unreferenced files younger than this are kept (a "
                    "writer still writing has not committed them yet), at least one day; default 7. "
                    "expire_snapshots: a ceiling on every table's snapshot age in days (each table's own "
                    "retention decides otherwise: tables.*.retention, table_defaults.retention); default none.",
    )
    scope: Literal["all", "declared"] = Field(
        default="all",
        description="all: every table of the default catalog (a declared table only if its 'maintenance' lists "
                    "the action); declared: only the declared tables that list it.",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        problem = cron_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class RecoverySpec(Strict):
    """What the recovery layer promises."""

    LAYER: ClassVar[Layer] = Layer.RECOVERY  # the layer its keys belong to (change review)

    backup_retention_days: int = Field(default=7, ge=1, le=35, description="Catalog database backup retention.")
    backup_schedule: str = Field(
        default="*/15 * * * *",
        description="Cron (crontab(5), UTC) of the catalog backups on docker and native (aws: AWS Backup's "
                    "continuous backup). Must fire at least once per rpo_minutes.",
    )
    rpo_minutes: int = Field(default=60, ge=1, description="Recovery point objective: the most recent commits a "
                                                           "restore may lose, in minutes.")
    rto_minutes: int = Field(default=120, ge=1, description="Recovery time objective: loss to every table readable.")

    @field_validator("backup_schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        problem = cron_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class ObservabilitySpec(Strict):
    """Signals derived from the metadata tables: what the exporter measures, how fast alerts fire.

    CatalogDown fires within ``catalog_down_bound_s`` of the catalog failing, the sum of every wait on
    the way: the exporter's next catalog probe starts within ``probe_interval_s`` and, for a catalog
    that hangs rather than refuses, gives up after ``probe_timeout_s``; Prometheus scrapes the 0 within
    ``scrape_interval_s`` and evaluates the rule within another ``scrape_interval_s``; the rule then
    holds for ``catalog_down_for_s``, counted in whole evaluation intervals. A catalog that is down for
    less than ``catalog_down_for_s`` (a crash its watchdog restarts within seconds) never fires it, on
    purpose. A table is stale past its promise, and TableStale waits ``stale_for_s`` (at least one
    refresh, so a commit the exporter has not seen yet never raises it).
    """

    LAYER: ClassVar[Layer] = Layer.OBSERVABILITY  # the layer its keys belong to (change review)

    freshness_minutes: int = Field(default=60, ge=1, description="Freshness promise of a table no declaration "
                                                                  "covers: older than this is stale.")
    alarm_email: EmailStr | None = Field(default=None, description="Where alarms go (cloud).")
    scrape_interval_s: int = Field(default=5, ge=1, le=300, description="Prometheus scrape and rule evaluation "
                                                                         "interval.")
    probe_interval_s: int = Field(default=5, ge=1, le=300, description="How often the exporter checks the catalog "
                                                                        "(/v1/config and a load-table) and services.")
    refresh_interval_s: int = Field(default=30, ge=5, le=3600, description="How often the exporter re-reads every "
                                                                            "table's metadata.")
    probe_timeout_s: int = Field(default=5, ge=1, le=60, description="How long the exporter waits for one answer "
                                                                     "of the catalog or a service before counting "
                                                                     "it down.")
    catalog_down_for_s: int = Field(default=10, ge=0, le=3600, description="How long the catalog must fail before "
                                                                            "CatalogDown fires.")
    stale_for_s: int | None = Field(default=None, ge=0, le=86400, description="How long a table must be past its "
                                                                               "promise before TableStale fires "
                                                                               "(default: refresh_interval_s).")
    small_file_size: str = Field(default="32MiB", description=f"A data file smaller than this is small: {SIZE_HELP}.")
    small_files_alert: int = Field(default=100, ge=1, description="Small data files in one table that raise "
                                                                   "TableHasManySmallFiles.")
    delete_file_ratio_alert: float = Field(default=0.2, gt=0, le=1, description="Delete files / all files of a table "
                                                                                 "that raise DeleteFilesPiling.")
    snapshot_retention_days: int = Field(default=7, ge=1, le=3650, description="Snapshot retention of a table no "
                                                                                "expire_snapshots job covers.")
    manifests_alert: int = Field(default=200, ge=1, le=100_000,
                                 description="Manifests in a table's current snapshot that raise ManifestsPiling: "
                                             "planning reads every one (rewrite_manifests and manifest merging keep "
                                             "them few).")
    disk_interval_s: int = Field(default=60, ge=5, le=3600, description="How often the exporter measures each "
                                                                        "service's state on disk (natively) and the "
                                                                        "database's replication slots.")
    disk_forecast_days: int = Field(
        default=7, ge=1, le=365,
        description="ServiceDiskFilling fires when a service's state, growing as it did over the last "
                    "disk_forecast_window_hours, would pass its disk budget (services.<name>.disk) within this many "
                    "days.")
    disk_forecast_window_hours: int = Field(
        default=6, ge=1, le=168,
        description="The history the disk forecast's growth is measured over (a platform's first hours, its tables "
                    "filling up to their retention, grow faster than its days).")
    disk_forecast_for_s: int = Field(default=3600, ge=0, le=86400,
                                     description="How long the forecast must hold before ServiceDiskFilling fires.")
    exporter_workers: int = Field(default=8, ge=1, le=64, description="Tables the exporter loads in parallel.")
    discover_tables: bool = Field(default=True, description="Also watch tables nobody declared (with the default "
                                                             "freshness promise).")
    retention_days: int = Field(default=7, ge=1, le=3650, description="How long Prometheus keeps samples.")
    retention_size: str = Field(default="512MB", description=f"Most disk Prometheus's TSDB may use: {SIZE_HELP}.")

    @field_validator("small_file_size", "retention_size")
    @classmethod
    def _size(cls, value: str) -> str:
        parse_size(value)
        return value

    @model_validator(mode="after")
    def _stale_after_refresh(self) -> ObservabilitySpec:
        if self.stale_for_s is not None and self.stale_for_s < self.refresh_interval_s:
            raise ValueError(
                f"stale_for_s: {self.stale_for_s} is shorter than refresh_interval_s {self.refresh_interval_s}: a "
                "commit the exporter has not read yet would raise TableStale; use at least the refresh interval")
        return self

    @property
    def table_stale_for_s(self) -> int:
        """How long a table is past its promise before TableStale fires."""
        return self.stale_for_s if self.stale_for_s is not None else self.refresh_interval_s

    @property
    def catalog_down_terms_s(self) -> dict[str, int]:
        """Each wait between the catalog failing and CatalogDown firing, in seconds (see the class docstring)."""
        evaluation = self.scrape_interval_s
        return {"probe_interval_s": self.probe_interval_s, "probe_timeout_s": self.probe_timeout_s,
                "scrape_interval_s": self.scrape_interval_s, "evaluation_interval_s": evaluation,
                "catalog_down_for_s": math.ceil(self.catalog_down_for_s / evaluation) * evaluation}

    @property
    def catalog_down_bound_s(self) -> int:
        """Worst case from the catalog failing (hung or gone) to CatalogDown firing: the sum of its terms."""
        return sum(self.catalog_down_terms_s.values())

    @property
    def small_file_bytes(self) -> int:
        return parse_size(self.small_file_size)
