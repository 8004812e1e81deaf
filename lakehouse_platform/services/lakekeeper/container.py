"""Lakekeeper on docker: the server, its migrate and warehouse jobs, and the S3 loopback sidecar."""

from __future__ import annotations

from lakehouse_platform.placeholders import secret
from lakehouse_platform.services import steps
from lakehouse_platform.services.capabilities import STORE
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.lakekeeper.config import NAME, lab_request, pg_env, warehouse_script
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.registry import needed


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=["serve"], env=pg_env(ctx))


def migrate_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=["migrate"], env=pg_env(ctx))


def warehouse_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(
        entrypoint=list(steps.SHELL_ENTRYPOINT), command=[warehouse_script(ctx, lab_request(ctx))],
        env={"LAKEKEEPER_URL": ctx.url(NAME, "http"), "S3_ACCESS_KEY": secret("s3-access-key"),
             "S3_SECRET_KEY": secret("s3-secret-key")},
    )


def loopback(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    name = needed(ctx.spec, STORE, ctx.name)
    store = ctx.address(name, "s3")
    port = ctx.spec.services[name].ports["s3"].external
    return ContainerPlan(command=[f"TCP-LISTEN:{port},fork,reuseaddr", f"TCP:{store}"], network_mode_service=NAME)
