"""The catalog backups' constants and the PostgreSQL connection they read."""

from __future__ import annotations

from infra.operations.config import ENV_PG_PASSWORD
from infra.services.context import ServiceContext
from infra.services.placeholders import secret

NAME = "catalog-backup"


ROLE = "backup"


POSTGRES = "postgres"


def _postgres_env(ctx: ServiceContext) -> dict[str, str]:
    return {ENV_PG_PASSWORD: secret("postgres-password")} if ctx.enabled(POSTGRES) else {}
