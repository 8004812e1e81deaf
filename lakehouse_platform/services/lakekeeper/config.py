"""Lakekeeper's configuration on both targets that run it: its database, the bootstrap and the warehouse request."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services import steps
from lakehouse_platform.services.capabilities import DATABASE, DATABASE_PASSWORD, DATABASE_USER, STORE
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.registry import needed

NAME = "lakekeeper"
#: Its database on the platform's database (``CatalogRole.database``).
DATABASE_NAME = "lakekeeper"


MIGRATE_JOB = "lakekeeper-migrate"


WAREHOUSE_JOB = "lakekeeper-warehouse"


LOOPBACK = "lakekeeper-s3-loopback"


#: The project bootstrap creates (LAKEKEEPER__ENABLE_DEFAULT_PROJECT, on by default).
DEFAULT_PROJECT = "00000000-0000-0000-0000-000000000000"


def pg_env(ctx: ServiceContext) -> dict[str, str]:
    database = ctx.address(needed(ctx.spec, DATABASE, ctx.name), "pg")
    url = f"postgresql://{DATABASE_USER}:{secret(DATABASE_PASSWORD)}@{database}/{DATABASE_NAME}"
    return {
        "LAKEKEEPER__PG_DATABASE_URL_READ": url,
        "LAKEKEEPER__PG_DATABASE_URL_WRITE": url,
        "LAKEKEEPER__PG_ENCRYPTION_KEY": secret("lakekeeper-encryption-key"),
    }


def pg_env_separate(ctx: ServiceContext) -> dict[str, str]:
    """The database settings as separate variables: on aws a secret is injected whole, never inside a URL."""
    host, port = ctx.address(needed(ctx.spec, DATABASE, ctx.name), "pg").rsplit(":", 1)
    return {
        "LAKEKEEPER__PG_HOST_R": host, "LAKEKEEPER__PG_HOST_W": host, "LAKEKEEPER__PG_PORT": port,
        "LAKEKEEPER__PG_USER": DATABASE_USER, "LAKEKEEPER__PG_DATABASE": DATABASE_NAME,
        "LAKEKEEPER__PG_PASSWORD": secret(DATABASE_PASSWORD), "LAKEKEEPER__PG_SSL_MODE": "require",
        "LAKEKEEPER__PG_ENCRYPTION_KEY": secret("lakekeeper-encryption-key"),
    }


def key_prefix() -> str:
    """Lakekeeper's tables live under their own prefix of the bucket (no path collides with another catalog's)."""
    return NAME


def warehouse_request(spec: PlatformSpec, profile: dict[str, Any], credential: dict[str, Any]) -> dict[str, Any]:
    """``CreateWarehouseRequest`` (docs/.../management-open-api.yaml) in the default project."""
    return {
        "warehouse-name": spec.catalog.warehouse, "project-id": DEFAULT_PROJECT,
        "storage-profile": {"type": "s3", "bucket": spec.storage.bucket, "key-prefix": key_prefix(), **profile},
        "storage-credential": {"type": "s3", **credential},
    }


def lab_request(ctx: ServiceContext) -> dict[str, Any]:
    """The lab store at its host address (Lakekeeper reaches it through the loopback sidecar); no STS."""
    spec = ctx.spec
    return warehouse_request(
        spec,
        {"flavor": "s3-compat", "endpoint": ctx.url(needed(ctx.spec, STORE, ctx.name), "s3", Side.EXTERNAL),
         "path-style-access": True,
         "region": spec.storage.region, "sts-enabled": False},
        {"credential-type": "access-key", "access-key-id": steps.EnvRef("S3_ACCESS_KEY"),
         "secret-access-key": steps.EnvRef("S3_SECRET_KEY")},
    )


def warehouse_script(ctx: ServiceContext, request: dict[str, Any]) -> str:
    """Wait for health, bootstrap (400 CatalogAlreadyBootstrapped: done before), create the warehouse (409: exists)."""
    spec = ctx.spec
    api = '"$LAKEKEEPER_URL/management/v1'
    return (
        steps.Script()
        .wait("Lakekeeper health", steps.Script.call("GET", '"$LAKEKEEPER_URL/health"'))
        .step("bootstrap Lakekeeper",
              steps.Script.call("POST", f'{api}/bootstrap"', body={"accept-terms-of-use": True}),
              already=(("400", "CatalogAlreadyBootstrapped|ConcurrentBootstrap"),))
        .step(f"create warehouse {spec.catalog.warehouse}",
              steps.Script.call("POST", f'{api}/warehouse"', body=request), done=("201", "200"))
        .render()
    )
