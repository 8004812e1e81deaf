"""Polaris on docker: the server and bootstrap job from the pinned images, the catalog job from the operations image."""

from __future__ import annotations

import json

from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.operations_support import operations_plan
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.polaris.config import (
    ACCESS_CONFIG,
    access_command,
    access_config,
    access_env,
    bootstrap_command,
    catalog_request,
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
    """The operations image's access job: the catalog and every identity's principal, as root."""
    config = access_config(ctx, catalog_request(ctx.spec, lab_storage(ctx)))
    return operations_plan(command=access_command(ACCESS_CONFIG), env=access_env(ctx),
                           uploads={ACCESS_CONFIG: json.dumps(config, indent=2) + "\n"}, bind_mounts={})
