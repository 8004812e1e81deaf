"""PostgreSQL on docker: the pinned image with the platform's server flags."""

from __future__ import annotations

from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.capabilities import DATABASE_BACKUP_PASSWORD
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.postgres.config import (
    BACKUP_PASSWORD_ENV,
    backup_role_sql,
    create_databases_sql,
    server_flags,
    server_settings,
)


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Official image; data on a named volume, init SQL uploaded, logical WAL on."""
    return ContainerPlan(
        command=["postgres", *server_flags(server_settings(ctx.spec))],
        env={"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": secret("postgres-password"),
             BACKUP_PASSWORD_ENV: secret(DATABASE_BACKUP_PASSWORD)},
        # At the cluster's creation (the lab's down removes its volume): the databases, then the backups' role.
        uploads={"/docker-entrypoint-initdb.d/10-databases.sql": create_databases_sql(),
                 "/docker-entrypoint-initdb.d/20-backup-role.sql": backup_role_sql(ctx)},
        volumes={"data": "/var/lib/postgresql"},
    )
