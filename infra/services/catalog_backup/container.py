"""The catalog backups on docker: the operations image (with the lab server's pg_dump) running the backup role."""

from __future__ import annotations

from infra.services import operations_support as support
from infra.services.catalog_backup.config import ROLE, _postgres_env
from infra.services.context import ServiceContext
from infra.services.plans import ContainerHost, ContainerPlan


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    port = ctx.listen_port("http")
    return support.container_plan(ctx, host, ROLE, port, env=_postgres_env(ctx))
