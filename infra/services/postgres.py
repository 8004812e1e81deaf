"""PostgreSQL: the catalogs' database and the bookshop's operational source (catalog layer)."""

from __future__ import annotations

from infra.services.base import ContainerPlan, ServiceContext, secret

NAME = "postgres"
DATABASES = ("polaris", "lakekeeper", "bookshop")

DEFAULT = {
    "layer": "catalog",
    "role": "database behind the production catalogs, and the bookshop's operational source",
    "version": "18.6",
    "native_version": None,
    "image": "postgres:18.6",
    "ports": {"pg": {"internal": 5432, "external": 5432}},
    "health": {"kind": "tcp", "port": "pg", "command": ["CMD-SHELL", "pg_isready -U postgres -h 127.0.0.1"]},
    "memory": "256MiB",
}

# Logical WAL so Debezium can capture the bookshop's changes.
SERVER_SETTINGS = {"wal_level": "logical", "max_wal_senders": "10", "max_replication_slots": "10"}


def init_sql() -> str:
    """Creates the catalogs' and the bookshop's databases on first start."""
    return "".join(f"CREATE DATABASE {db};\n" for db in DATABASES)


def container(ctx: ServiceContext) -> ContainerPlan:
    """Official image; data on a named volume, init SQL uploaded, logical WAL on."""
    command = ["postgres"]
    for key, value in SERVER_SETTINGS.items():
        command += ["-c", f"{key}={value}"]
    return ContainerPlan(
        command=command,
        env={"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": secret("postgres-password")},
        uploads={"/docker-entrypoint-initdb.d/10-databases.sql": init_sql()},
        volumes={"data": "/var/lib/postgresql"},
    )
