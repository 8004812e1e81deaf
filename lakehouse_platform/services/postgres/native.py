"""PostgreSQL natively: Debian's server binaries run as their own user, on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.capabilities import DATABASE_BACKUP_PASSWORD
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import NativeHost, NativePlan
from lakehouse_platform.services.postgres.config import (
    BACKUP_PASSWORD_ENV,
    backup_role_sql,
    create_databases_sql,
    drop_undeclared_slots_sql,
    server_flags,
    server_settings,
)

# The server refuses to run as root; natively it runs as the Debian package's system user.
NATIVE_USER = "postgres"

#: Where the runbook says how to make a major upgrade (the refusal names it).
MAJOR_UPGRADE_DOC = "docs/operations/upgrades.md#postgresql"


def data_dir(home: Path) -> Path:
    """The cluster's directory under the service's home (initdb wants an empty one; the home also holds .pid)."""
    return home / "data"


def in_place(ctx: ServiceContext, host: NativeHost) -> str | None:
    """Refuse a server of another major than the cluster on disk: its data directory is not readable by it.

    A minor version (15.18 -> 15.20) is in place: the same data directory, the server restarted on the new
    binaries. A major one needs ``pg_upgrade`` or a dump and restore, and Debezium's replication slot does
    not survive either (the CDC source snapshots again): the operator's procedure, never a side effect of
    ``pulumi up``. The cluster's major is ``PG_VERSION`` in its data directory (PostgreSQL writes it at initdb).
    """
    if host.artifact is None:
        return None
    try:
        on_disk = (data_dir(host.home) / "PG_VERSION").read_text().strip()
    except OSError:
        return None  # no cluster yet (initdb makes it), or none this process may read
    runs = host.artifact.version.split(".")[0]
    if on_disk == runs:
        return None
    return (f"services.{ctx.name}: the cluster in {data_dir(host.home)} is PostgreSQL {on_disk}; this stack now runs "
            f"PostgreSQL {host.artifact.version} (pin {ctx.service.version}). A major upgrade cannot be made in place: "
            f"the data directory needs pg_upgrade or a dump and restore, and Debezium's replication slot does not "
            f"survive it. Keep this stack on PostgreSQL {on_disk} for now, then follow {MAJOR_UPGRADE_DOC} "
            "(pg_dump every database with the platform's backups, pulumi destroy, move the data directory aside, "
            "pulumi up on the new major, restore, let Debezium snapshot again).")


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """initdb once (password auth), then the postmaster on 127.0.0.1 with logical WAL."""
    assert host.artifact is not None
    bindir = host.artifact.path
    data = data_dir(host.home)
    port = ctx.listen_port("pg")
    pwfile = host.home / "pwfile"
    sql = host.home / "create-databases.sql"
    settings = {"listen_addresses": "127.0.0.1", "port": str(port), "unix_socket_directories": str(data),
                **server_settings(ctx.spec)}
    psql = [str(bindir / "psql"), f"host=127.0.0.1 port={port} user=postgres dbname=postgres",
            "-v", "ON_ERROR_STOP=1", "-q", "-f", str(sql)]
    return NativePlan(
        argv=[str(bindir / "postgres"), "-D", str(data), *server_flags(settings)],
        files={str(pwfile): secret("postgres-password"),
               str(sql): create_databases_sql() + backup_role_sql(ctx) + drop_undeclared_slots_sql(ctx)},
        env={"LANG": "C.UTF-8", "PGPASSWORD": secret("postgres-password"),
             BACKUP_PASSWORD_ENV: secret(DATABASE_BACKUP_PASSWORD)},
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
