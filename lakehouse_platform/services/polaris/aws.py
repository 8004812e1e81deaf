"""Polaris on aws: the server behind the catalogs' load balancer, its bootstrap and catalog jobs as ECS tasks."""

from __future__ import annotations

import json

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import KMS_KEY_ARN, VENDING_ROLE_ARN, platform_value
from lakehouse_platform.services.aws_catalogs import CatalogServer
from lakehouse_platform.services.aws_parts import Foundation
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import EcsPlan
from lakehouse_platform.services.polaris.config import (
    ACCESS_CONFIG,
    ADMIN_ENTRYPOINT,
    BOOTSTRAP_JOB,
    CATALOG_JOB,
    NAME,
    access_command,
    access_config,
    access_env,
    aws_storage,
    bootstrap_command,
    catalog_request,
    datasource_env,
    server_env,
)


def ecs(ctx: ServiceContext) -> EcsPlan:
    """Polaris on Fargate: its task role may only assume the vending role, which the catalog names."""
    env = server_env(ctx)
    env["AWS_REGION"] = ctx.spec.aws.region
    return EcsPlan(env=env)


def bootstrap_ecs(ctx: ServiceContext) -> EcsPlan:
    """The admin tool's own entrypoint with the bootstrap command (its secret becomes a task variable)."""
    return EcsPlan(env=datasource_env(ctx), entry_point=[ADMIN_ENTRYPOINT], command=bootstrap_command())


def catalog_ecs(ctx: ServiceContext) -> EcsPlan:
    """The access job in the operations image: root's and every identity's secrets from Secrets Manager."""
    env = access_env(ctx)
    env.update({"VENDING_ROLE_ARN": platform_value(VENDING_ROLE_ARN), "KMS_KEY_ARN": platform_value(KMS_KEY_ARN)})
    config = access_config(ctx, catalog_request(ctx.spec, aws_storage(ctx)))
    return EcsPlan(env=env, command=access_command(ACCESS_CONFIG),
                   files={ACCESS_CONFIG: json.dumps(config, indent=2) + "\n"})


def build(foundation: Foundation) -> CatalogServer:
    """Polaris behind the catalogs' load balancer, with its setup jobs."""
    return CatalogServer(foundation, NAME, jobs=(BOOTSTRAP_JOB, CATALOG_JOB))


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {name: None for name in (NAME, BOOTSTRAP_JOB, CATALOG_JOB) if name in spec.enabled_services()}
