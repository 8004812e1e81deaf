"""The maintenance scheduler on docker."""

from __future__ import annotations

from infra.services import operations_support as support
from infra.services.context import ServiceContext
from infra.services.maintenance_scheduler.config import ROLE
from infra.services.plans import ContainerHost, ContainerPlan


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The operations image running the scheduler's maintenance role."""
    port = ctx.listen_port("http")
    return support.container_plan(ctx, host, ROLE, port,
                                  env={**support.maintenance_store_env(ctx.spec),
                                       **support.catalog_secret_env(ctx.spec)})
