"""The catalog backups on docker: the operations image (with the lab server's pg_dump) running the backup role."""

from __future__ import annotations

from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.catalog_backup.config import ROLE, _postgres_env
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    port = ctx.listen_port("http")
    return support.container_plan(ctx, host, ROLE, port, env=_postgres_env(ctx))
