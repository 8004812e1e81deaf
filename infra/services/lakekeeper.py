"""Lakekeeper: production catalog two, in Rust, on PostgreSQL (catalog layer).

Lakekeeper vends the store's host-side address (localhost:8333) to host clients, and must reach
the store at that same address itself; the loopback sidecar shares its network namespace and
forwards localhost:8333 to the store's internal address.
"""

from __future__ import annotations

from infra.services.base import ContainerPlan, ServiceContext, secret

NAME = "lakekeeper"

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

MIGRATE_JOB = "lakekeeper-migrate"
MIGRATE_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "migrates Lakekeeper's schema in PostgreSQL (the platform's release)",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "memory": "128MiB",
    "depends_on": ["postgres"],
}

LOOPBACK = "lakekeeper-s3-loopback"
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


def container(ctx: ServiceContext) -> ContainerPlan:
    return ContainerPlan(command=["serve"], env=pg_env(ctx))


def migrate_job(ctx: ServiceContext) -> ContainerPlan:
    return ContainerPlan(command=["migrate"], env=pg_env(ctx))


def loopback(ctx: ServiceContext) -> ContainerPlan:
    store = ctx.address("seaweedfs", "s3")
    port = ctx.spec.services["seaweedfs"].ports["s3"].external
    return ContainerPlan(
        command=[f"TCP-LISTEN:{port},fork,reuseaddr", f"TCP:{store}"],
        network_mode_service=NAME,
    )
