"""The operating layers' promises: maintenance schedules, recovery objectives, freshness and alarms."""

from __future__ import annotations

from typing import Literal

from apscheduler.triggers.cron import CronTrigger
from pydantic import EmailStr, Field, field_validator, model_validator

from infra.operations.cron import cron_max_interval_minutes
from infra.spec.base import SIZE_HELP, Strict, parse_size

__all__ = ["MaintenanceJob", "ObservabilitySpec", "RecoverySpec", "cron_max_interval_minutes", "cron_problem",
           "eventbridge_cron"]


def cron_problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a valid five-field cron expression (UTC), or None.

    Parsed by APScheduler's crontab parser, the same one the native scheduler runs, so what is
    accepted here is what runs.
    """
    if len(schedule.split()) != 5:
        return f"{schedule!r} is not a cron expression of five fields (minute hour day month weekday)"
    try:
        CronTrigger.from_crontab(schedule, timezone="UTC")
    except ValueError as exc:
        return f"{schedule!r} is not a valid cron expression: {exc}"
    return None


def _eventbridge_day_of_week(field_value: str) -> str:
    """Cron's day-of-week (Sunday = 0 or 7) in EventBridge's numbering (Sunday = 1)."""
    def day(token: str) -> str:
        return str(int(token) % 7 + 1) if token.isdigit() else token

    parts = []
    for part in field_value.split(","):
        head, slash, step = part.partition("/")
        days = [day(t) for t in head.split("-")]
        if len(days) == 2 and all(d.isdigit() for d in days) and int(days[0]) > int(days[1]):
            raise ValueError(f"the weekday range {head!r} wraps past Sunday, which EventBridge Scheduler refuses")
        parts.append("-".join(days) + slash + step)
    return ",".join(parts)


def eventbridge_cron(schedule: str) -> str:
    """A five-field cron (UTC, Sunday = 0) as an EventBridge Scheduler ``cron()`` (six fields, one ``?``).

    EventBridge accepts only one of day-of-month and day-of-week: the other must be ``?``.
    """
    minute, hour, day_of_month, month, day_of_week = schedule.split()
    if day_of_month != "*" and day_of_week != "*":
        raise ValueError(f"{schedule!r} restricts both day-of-month and day-of-week; EventBridge Scheduler "
                         "accepts only one of them (set the other to *)")
    if day_of_week == "*":
        day_of_week = "?"
    else:
        day_of_month, day_of_week = "?", _eventbridge_day_of_week(day_of_week)
    return f"cron({minute} {hour} {day_of_month} {month} {day_of_week} *)"


class MaintenanceJob(Strict):
    """A maintenance task scheduled by the platform (orchestration layer)."""

    action: Literal["rewrite_data_files", "expire_snapshots", "rewrite_manifests", "remove_orphan_files"] = Field(
        description="The Iceberg maintenance action, run as its Trino procedure on every table in scope.")
    schedule: str = Field(description="Cron expression (UTC), e.g. '0 3 * * *'.")
    older_than_days: int = Field(
        default=7, ge=1, le=3650,
        description="Age threshold for expire/orphan removal: snapshots and unreferenced files younger than this "
                    "are kept. It is the safety margin against writers still writing, so at least one day.",
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

    backup_retention_days: int = Field(default=7, ge=1, le=35, description="Catalog database backup retention.")
    backup_schedule: str = Field(
        default="*/15 * * * *",
        description="Cron (UTC) of the catalog backups on docker and native (aws: AWS Backup's continuous backup). "
                    "Must fire at least once per rpo_minutes.",
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

    The catalog-down bound is ``probe_interval_s + scrape_interval_s`` (the exporter notices, Prometheus
    scrapes) ``+ scrape_interval_s`` (the rule is evaluated) ``+ catalog_down_for_s``; a table is stale
    past its promise, and the alert waits ``stale_for_s`` (at least one refresh, so a commit the exporter
    has not seen yet never raises it).
    """

    freshness_minutes: int = Field(default=60, ge=1, description="Freshness promise of a table no declaration "
                                                                  "covers: older than this is stale.")
    alarm_email: EmailStr | None = Field(default=None, description="Where alarms go (cloud).")
    scrape_interval_s: int = Field(default=5, ge=1, le=300, description="Prometheus scrape and rule evaluation "
                                                                         "interval.")
    probe_interval_s: int = Field(default=5, ge=1, le=300, description="How often the exporter checks the catalog "
                                                                        "(/v1/config and a load-table) and services.")
    refresh_interval_s: int = Field(default=30, ge=5, le=3600, description="How often the exporter re-reads every "
                                                                            "table's metadata.")
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
    def catalog_down_bound_s(self) -> int:
        """Worst case from the catalog failing to CatalogDown firing (see the class docstring)."""
        return self.probe_interval_s + 2 * self.scrape_interval_s + self.catalog_down_for_s

    @property
    def small_file_bytes(self) -> int:
        return parse_size(self.small_file_size)
