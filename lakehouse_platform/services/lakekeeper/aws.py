"""Lakekeeper on aws: the server behind the catalogs' load balancer, its migrate and warehouse jobs as ECS tasks."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import KMS_KEY_ARN, VENDING_ROLE_ARN, platform_value
from lakehouse_platform.services import steps
from lakehouse_platform.services.aws_catalogs import CatalogServer
from lakehouse_platform.services.aws_parts import Foundation
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.lakekeeper.config import (
    MIGRATE_JOB,
    NAME,
    WAREHOUSE_JOB,
    pg_env_separate,
    warehouse_request,
    warehouse_script,
)
from lakehouse_platform.services.plans import EcsPlan

#: On aws Lakekeeper reaches S3 as its task role, through the vending role the warehouse names
#: (``aws-system-identity``, off by default: storage/s3.rs). No external ID: the vending role trusts
#: only this account's two catalog task roles, so there is no third party to confuse.
AWS_SYSTEM_IDENTITY_ENV = {
    "LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS": "true",
    "LAKEKEEPER__S3_REQUIRE_EXTERNAL_ID_FOR_SYSTEM_CREDENTIALS": "false",
}


def ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(command=["serve"],
                   env={**pg_env_separate(ctx), "AWS_REGION": ctx.spec.aws.region, **AWS_SYSTEM_IDENTITY_ENV})


def migrate_ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(command=["migrate"], env={**pg_env_separate(ctx), "AWS_REGION": ctx.spec.aws.region})


def aws_request(ctx: ServiceContext) -> dict[str, Any]:
    """S3 itself: Lakekeeper assumes the vending role for its own access and for vended credentials."""
    spec = ctx.spec
    role = steps.EnvRef("VENDING_ROLE_ARN")
    return warehouse_request(
        spec,
        {"flavor": "aws", "region": spec.aws.region, "sts-enabled": True, "assume-role-arn": role,
         "sts-role-arn": role, "aws-kms-key-arn": steps.EnvRef("KMS_KEY_ARN")},
        {"credential-type": "aws-system-identity"},
    )


def warehouse_ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(
        entry_point=list(steps.SHELL_ENTRYPOINT), command=[warehouse_script(ctx, aws_request(ctx))],
        env={"LAKEKEEPER_URL": ctx.url(NAME, "http"), "VENDING_ROLE_ARN": platform_value(VENDING_ROLE_ARN),
             "KMS_KEY_ARN": platform_value(KMS_KEY_ARN)},
    )


def build(foundation: Foundation) -> CatalogServer:
    """Lakekeeper behind the catalogs' load balancer, with its setup jobs."""
    return CatalogServer(foundation, NAME, jobs=(MIGRATE_JOB, WAREHOUSE_JOB))


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {name: None for name in (NAME, MIGRATE_JOB, WAREHOUSE_JOB) if name in spec.enabled_services()}
