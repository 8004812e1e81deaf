"""PostgreSQL on docker: the pinned image with the platform's server flags."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.placeholders import secret
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.postgres.config import create_databases_sql, server_flags, server_settings


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Official image; data on a named volume, init SQL uploaded, logical WAL on."""
    return ContainerPlan(
        command=["postgres", *server_flags(server_settings(ctx.spec))],
        env={"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": secret("postgres-password")},
        uploads={"/docker-entrypoint-initdb.d/10-databases.sql": create_databases_sql()},
        volumes={"data": "/var/lib/postgresql"},
    )
