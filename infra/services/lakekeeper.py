"""Lakekeeper: production catalog two, in Rust, on PostgreSQL (catalog layer).

Lakekeeper vends the store's host-side address (localhost:8333) to host clients, and must reach
the store at that same address itself; on docker the loopback sidecar shares its network namespace
and forwards localhost:8333 to the store's internal address.

Whole definition: defaults, the container, its migrate job and loopback sidecar, the ECS task and
job, and its role as a catalog. Not on native: no registry serves Lakekeeper's server.
"""

from __future__ import annotations

from infra.services.base import (
    CatalogRole,
    ContainerHost,
    ContainerPlan,
    EcsPlan,
    SecretSpec,
    ServiceContext,
    ServiceDefinition,
    secret,
)
from infra.spec import Target

NAME = "lakekeeper"
MIGRATE_JOB = "lakekeeper-migrate"
LOOPBACK = "lakekeeper-s3-loopback"
NOT_NATIVE = "no build of Lakekeeper is obtainable from the package registries; it runs on docker and aws"

DEFAULT = {
    "layer": "catalog",
    "role": "production catalog two: REST, projects and warehouses, credential vending",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "ports": {"http": {"internal": 8181, "external": 8381}},
    "health": {"kind": "http", "port": "http", "path": "/health",
               "command": ["CMD", "/home/nonroot/lakekeeper", "healthcheck"]},
    "memory": "256MiB",
    "depends_on": ["postgres", "lakekeeper-migrate"],
}

MIGRATE_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "migrates Lakekeeper's schema in PostgreSQL (the platform's release)",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "memory": "128MiB",
    "depends_on": ["postgres"],
}

LOOPBACK_DEFAULT = {
    "layer": "catalog",
    "role": "forwards localhost:8333 inside Lakekeeper's network namespace to the store",
    "version": "1.8.0.3",
    "image": "alpine/socat:1.8.0.3",
    "health": {"kind": "command", "command": ["CMD", "nc", "-z", "127.0.0.1", "8333"]},
    "memory": "32MiB",
    "depends_on": ["lakekeeper", "seaweedfs"],
}


def pg_env(ctx: ServiceContext) -> dict[str, str]:
    url = f"postgresql://postgres:{secret('postgres-password')}@{ctx.address('postgres', 'pg')}/lakekeeper"
    return {
        "LAKEKEEPER__PG_DATABASE_URL_READ": url,
        "LAKEKEEPER__PG_DATABASE_URL_WRITE": url,
        "LAKEKEEPER__PG_ENCRYPTION_KEY": secret("lakekeeper-encryption-key"),
    }


def pg_env_separate(ctx: ServiceContext) -> dict[str, str]:
    """The database settings as separate variables: on aws a secret is injected whole, never inside a URL."""
    host, port = ctx.address("postgres", "pg").rsplit(":", 1)
    return {
        "LAKEKEEPER__PG_HOST_R": host, "LAKEKEEPER__PG_HOST_W": host, "LAKEKEEPER__PG_PORT": port,
        "LAKEKEEPER__PG_USER": "postgres", "LAKEKEEPER__PG_DATABASE": "lakekeeper",
        "LAKEKEEPER__PG_PASSWORD": secret("postgres-password"), "LAKEKEEPER__PG_SSL_MODE": "require",
        "LAKEKEEPER__PG_ENCRYPTION_KEY": secret("lakekeeper-encryption-key"),
    }


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=["serve"], env=pg_env(ctx))


def ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(command=["serve"], env={**pg_env_separate(ctx), "AWS_REGION": ctx.spec.aws.region})


def migrate_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=["migrate"], env=pg_env(ctx))


def migrate_ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(command=["migrate"], env={**pg_env_separate(ctx), "AWS_REGION": ctx.spec.aws.region})


def loopback(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    store = ctx.address("seaweedfs", "s3")
    port = ctx.spec.services["seaweedfs"].ports["s3"].external
    return ContainerPlan(command=[f"TCP-LISTEN:{port},fork,reuseaddr", f"TCP:{store}"], network_mode_service=NAME)


CATALOG = CatalogRole(
    database="lakekeeper",
    path="/catalog",
    engine_name="lakekeeper",
    warehouse=lambda spec: spec.catalog.warehouse,
    client_properties=lambda ctx: {"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    trino_properties=lambda ctx: {"iceberg.rest-catalog.vended-credentials-enabled": "true"},
    vends_credentials=True,
)

SERVICES = (
    ServiceDefinition(
        name=MIGRATE_JOB, default=MIGRATE_JOB_DEFAULT, job_of=NAME, summary="schema migration (the platform's release)",
        container=migrate_job, ecs=migrate_ecs, unavailable={Target.NATIVE: NOT_NATIVE},
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="REST catalog in Rust with credential vending",
        container=container, ecs=ecs, unavailable={Target.NATIVE: NOT_NATIVE}, catalog=CATALOG,
        secrets=(SecretSpec("lakekeeper-encryption-key", "lakekeeperEncryptionKey", "lab-lakekeeper-encryption-key"),),
    ),
    ServiceDefinition(
        name=LOOPBACK, default=LOOPBACK_DEFAULT, job_of=NAME, summary="localhost:8333 inside Lakekeeper's netns",
        container=loopback,
        unavailable={Target.NATIVE: "a docker sidecar; natively every service already shares 127.0.0.1",
                     Target.AWS: "a docker sidecar; on aws the catalogs reach S3 directly"},
    ),
)
