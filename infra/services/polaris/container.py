"""Polaris on docker: the server, the bootstrap job and the catalog job from the pinned images."""

from __future__ import annotations

from infra.services import steps
from infra.services.context import ServiceContext
from infra.services.placeholders import secret
from infra.services.plans import ContainerHost, ContainerPlan
from infra.services.polaris.config import (
    bootstrap_command,
    catalog_job_env,
    catalog_request,
    catalog_script,
    datasource_env,
    lab_storage,
    server_env,
)


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Polaris on the lab store: with STS unavailable it reads and writes with the store's own keys."""
    env = server_env(ctx)
    env.update({"AWS_REGION": ctx.spec.storage.region, "AWS_ACCESS_KEY_ID": secret("s3-access-key"),
                "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key")})
    return ContainerPlan(env=env)


def bootstrap_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=bootstrap_command(), env=datasource_env(ctx))


def catalog_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(entrypoint=list(steps.SHELL_ENTRYPOINT),
                         command=[catalog_script(ctx, catalog_request(ctx.spec, lab_storage(ctx)))],
                         env=catalog_job_env(ctx))
