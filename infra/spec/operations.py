"""The operating layers' promises: maintenance schedules, recovery objectives, freshness and alarms."""

from __future__ import annotations

from typing import Literal

from apscheduler.triggers.cron import CronTrigger
from pydantic import EmailStr, Field, field_validator

from infra.operations.cron import cron_max_interval_minutes
from infra.spec.base import Strict

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

    action: Literal["rewrite_data_files", "expire_snapshots", "rewrite_manifests", "remove_orphan_files"]
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
    """Signals derived from the metadata tables."""

    freshness_minutes: int = Field(default=60, ge=1, description="A table older than this is stale.")
    alarm_email: EmailStr | None = Field(default=None, description="Where alarms go (cloud).")
