"""PostgreSQL: the catalogs' database and the bookshop's operational source (catalog layer)."""

from __future__ import annotations

from infra.services.base import ContainerPlan, NativeHost, NativePlan, ServiceContext, secret

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


# The server refuses to run as root; natively it runs as the Debian package's system user.
NATIVE_USER = "postgres"


def create_databases_sql() -> str:
    """Idempotent: creates each database only where it is missing (psql's \\gexec)."""
    return "".join(
        f"SELECT 'CREATE DATABASE {db}' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{db}')\\gexec\n"
        for db in DATABASES
    )


def server_flags(settings: dict[str, str]) -> list[str]:
    """``-c key=value`` for each server setting (same form on every target)."""
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]


def container(ctx: ServiceContext) -> ContainerPlan:
    """Official image; data on a named volume, init SQL uploaded, logical WAL on."""
    return ContainerPlan(
        command=["postgres", *server_flags(SERVER_SETTINGS)],
        env={"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": secret("postgres-password")},
        uploads={"/docker-entrypoint-initdb.d/10-databases.sql": create_databases_sql()},
        volumes={"data": "/var/lib/postgresql"},
    )


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """initdb once (password auth), then the postmaster on 127.0.0.1 with logical WAL."""
    bindir = host.artifact.path
    data = host.home / "data"  # initdb wants an empty directory; the home also holds .pid
    port = ctx.listen_port("pg")
    pwfile = host.home / "pwfile"
    sql = host.home / "create-databases.sql"
    settings = {"listen_addresses": "127.0.0.1", "port": str(port), "unix_socket_directories": str(data),
                **SERVER_SETTINGS}
    psql = [str(bindir / "psql"), f"host=127.0.0.1 port={port} user=postgres dbname=postgres",
            "-v", "ON_ERROR_STOP=1", "-q", "-f", str(sql)]
    return NativePlan(
        argv=[str(bindir / "postgres"), "-D", str(data), *server_flags(settings)],
        files={str(pwfile): secret("postgres-password"), str(sql): create_databases_sql()},
        env={"LANG": "C.UTF-8", "PGPASSWORD": secret("postgres-password")},
        setup=[
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", f"--pwfile={pwfile}",
             "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8",
             "--no-instructions"],
        ],
        post_start=[psql],
        health={"kind": "command", "argv": [str(bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port),
                                                   "-U", "postgres", "-d", "postgres"]},
        run_as_user=NATIVE_USER,
        stop_grace_s=15.0,
    )
