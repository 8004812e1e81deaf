"""The maintenance scheduler on docker."""

from __future__ import annotations

from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.maintenance_scheduler.config import ROLE
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The operations image running the scheduler's maintenance role."""
    port = ctx.listen_port("http")
    return support.container_plan(ctx, host, ROLE, port,
                                  env={**support.maintenance_store_env(ctx.spec),
                                       **support.catalog_secret_env(ctx.spec)})
