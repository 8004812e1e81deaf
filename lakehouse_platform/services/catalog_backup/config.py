"""The catalog backups' constants and the PostgreSQL connection they read."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.model.operations import cron_max_interval_minutes
from lakehouse_platform.runtime.config import ENV_PG_PASSWORD
from lakehouse_platform.services.capabilities import DATABASE, DATABASE_BACKUP_PASSWORD
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.placeholders import secret
from lakehouse_platform.services.registry import registry

NAME = "catalog-backup"


ROLE = "backup"




def check(spec: PlatformSpec) -> list[str]:
    """Backups fire often enough for the recovery point objective (aws: continuous backup instead)."""
    if spec.target is Target.AWS or NAME not in spec.enabled_services():
        return []
    recovery = spec.recovery
    every = cron_max_interval_minutes(recovery.backup_schedule)
    if every <= recovery.rpo_minutes:
        return []
    return [f"recovery.backup_schedule: {recovery.backup_schedule!r} leaves up to {every:g} minutes between "
            f"backups, more than recovery.rpo_minutes ({recovery.rpo_minutes}); back up at least every "
            f"{recovery.rpo_minutes} minutes (e.g. '*/{min(recovery.rpo_minutes, 59)} * * * *') or state a "
            "longer rpo_minutes"]


def stack_outputs(spec: PlatformSpec) -> dict[str, Any]:
    """How the recovery promise is kept here (merged into the ``recovery`` output): the schedule and the backups."""
    if spec.target is Target.AWS or NAME not in spec.enabled_services():
        return {}
    return {"recovery": {"backup_schedule": spec.recovery.backup_schedule,
                         "backups": f"{NAME} service: SQLite online backup / pg_dump, sha256 sidecars"}}


def _postgres_env(ctx: ServiceContext) -> dict[str, str]:
    """The backups' least role's password (``DATABASE_BACKUP_USER``): the superuser's never reaches the service."""
    return {ENV_PG_PASSWORD: secret(DATABASE_BACKUP_PASSWORD)} if registry().provider(ctx.spec, DATABASE) else {}
