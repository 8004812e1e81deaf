"""The catalog backups' constants and the PostgreSQL connection they read."""

from __future__ import annotations

from typing import Any

from infra.operations.config import ENV_PG_PASSWORD
from infra.services.context import ServiceContext
from infra.services.placeholders import secret
from infra.spec import PlatformSpec, Target

NAME = "catalog-backup"


ROLE = "backup"


POSTGRES = "postgres"


def stack_outputs(spec: PlatformSpec) -> dict[str, Any]:
    """How the recovery promise is kept here (merged into the ``recovery`` output): the schedule and the backups."""
    if spec.target is Target.AWS or NAME not in spec.enabled_services():
        return {}
    return {"recovery": {"backup_schedule": spec.recovery.backup_schedule,
                         "backups": f"{NAME} service: SQLite online backup / pg_dump, sha256 sidecars"}}


def _postgres_env(ctx: ServiceContext) -> dict[str, str]:
    return {ENV_PG_PASSWORD: secret("postgres-password")} if ctx.enabled(POSTGRES) else {}
