"""PostgreSQL natively: Debian's server binaries run as their own user, on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from infra.services.context import ServiceContext
from infra.services.placeholders import secret
from infra.services.plans import NativeHost, NativePlan
from infra.services.postgres.config import (
    SERVER_SETTINGS,
    create_databases_sql,
    drop_undeclared_slots_sql,
    server_flags,
)

# The server refuses to run as root; natively it runs as the Debian package's system user.
NATIVE_USER = "postgres"


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """initdb once (password auth), then the postmaster on 127.0.0.1 with logical WAL."""
    assert host.artifact is not None
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
        files={str(pwfile): secret("postgres-password"),
               str(sql): create_databases_sql() + drop_undeclared_slots_sql(ctx)},
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
        # Fast shutdown: SIGTERM is "smart" and waits for every client (Connect, the catalog's pool).
        stop_signal="SIGINT",
    )


def _installed() -> dict[int, Path]:
    found: dict[int, Path] = {}
    for bindir in Path("/usr/lib/postgresql").glob("*/bin"):
        if bindir.parent.name.isdigit() and (bindir / "postgres").exists() and (bindir / "initdb").exists():
            found[int(bindir.parent.name)] = bindir
    return found
