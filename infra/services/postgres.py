"""PostgreSQL: the catalogs' database and the bookshop's operational source (catalog layer).

Whole definition: defaults (logical WAL for Debezium), the container, the local process (its own
initdb cluster, run as the Debian package's system user), and the native artifact (the server
binaries of the newest PostgreSQL major Debian offers up to the pin). On aws it is RDS.
"""

from __future__ import annotations

import re
from pathlib import Path

from infra.artifacts import apt, cache
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.services.context import ServiceContext
from infra.services.definition import SecretSpec, ServiceDefinition
from infra.services.placeholders import secret
from infra.services.plans import ContainerHost, ContainerPlan, NativeHost, NativePlan
from infra.spec import Target

NAME = "postgres"
DATABASES = ("polaris", "lakekeeper", "bookshop", "fixture")  # fixture: the REST fixture on PostgreSQL

DEFAULT = {
    "layer": "catalog",
    "role": "database behind the production catalogs, and the bookshop's operational source",
    "version": "18.6",
    "image": "postgres:18.6",
    "ports": {"pg": {"internal": 5432, "external": 5432}},
    "health": {"kind": "tcp", "port": "pg", "command": ["CMD-SHELL", "pg_isready -U postgres -h 127.0.0.1"]},
    "memory": "256MiB",
}

# Logical WAL so Debezium can capture the bookshop's changes.
SERVER_SETTINGS = {"wal_level": "logical", "max_wal_senders": "10", "max_replication_slots": "10"}

# The server refuses to run as root; natively it runs as the Debian package's system user.
NATIVE_USER = "postgres"


def major_of(ctx: ServiceContext) -> int:
    return int(ctx.service.version.split(".")[0])


def create_databases_sql() -> str:
    """Idempotent: creates each database only where it is missing (psql's \\gexec)."""
    return "".join(
        f"SELECT 'CREATE DATABASE {db}' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{db}')\\gexec\n"  # noqa: S608 - fixed names
        for db in DATABASES
    )


def declared_slots(ctx: ServiceContext) -> list[str]:
    """The logical replication slots the stack's enabled CDC connectors own."""
    from infra.spec.streams import DebeziumPostgresSpec

    if not ctx.enabled("kafka-connect"):
        return []
    return sorted(c.slot for c in ctx.spec.streams.connectors if isinstance(c, DebeziumPostgresSpec))


def drop_undeclared_slots_sql(ctx: ServiceContext) -> str:
    """Drops every inactive logical slot no declared connector owns: a slot nobody reads retains WAL forever.

    The CDC source's own teardown drops its slot when its connector goes; this catches one it could
    not drop (the server was down during a destroy), at the server's next start.
    """
    keep = ", ".join(f"'{slot}'" for slot in declared_slots(ctx)) or "''"
    return ("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "  # noqa: S608 - validated names
            f"WHERE slot_type = 'logical' AND NOT active AND slot_name NOT IN ({keep});\n")


def server_flags(settings: dict[str, str]) -> list[str]:
    """``-c key=value`` for each server setting (same form on every target)."""
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Official image; data on a named volume, init SQL uploaded, logical WAL on."""
    return ContainerPlan(
        command=["postgres", *server_flags(SERVER_SETTINGS)],
        env={"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": secret("postgres-password")},
        uploads={"/docker-entrypoint-initdb.d/10-databases.sql": create_databases_sql()},
        volumes={"data": "/var/lib/postgresql"},
    )


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
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


# -- native artifact: Debian's server packages --------------------------------------------------


def _installed() -> dict[int, Path]:
    found: dict[int, Path] = {}
    for bindir in Path("/usr/lib/postgresql").glob("*/bin"):
        if bindir.parent.name.isdigit() and (bindir / "postgres").exists() and (bindir / "initdb").exists():
            found[int(bindir.parent.name)] = bindir
    return found


def artifact_key(ctx: ServiceContext) -> str:
    return f"postgres:{major_of(ctx)}"


def fetch_server(ctx: ServiceContext, oldest: int = 13) -> Artifact:
    """``/usr/lib/postgresql/<N>/bin`` for the newest N <= the pinned major that apt offers (or is installed).

    Debian 12 offers 15, so pin 18 yields 15 (said in ``notes``). Installed under a ``policy-rc.d``
    that forbids starting services; the cluster Debian creates on install is dropped (the platform
    runs its own ``initdb`` cluster).
    """
    wanted = major_of(ctx)
    key = artifact_key(ctx)
    with cache.locked(NAME):
        installed = _installed()
        chosen = wanted if wanted in installed else None
        if chosen is None:
            packages = [f"postgresql-{m}" for m in range(wanted, oldest - 1, -1)]
            offered = {int(p.split("-")[1]) for p in apt.refresh_if_unknown(packages)}
            best_offered = max(offered, default=None)
            best_installed = max((m for m in installed if m <= wanted), default=None)
            if best_installed is not None and (best_offered is None or best_installed >= best_offered):
                chosen = best_installed
            elif best_offered is not None:
                apt.install([f"postgresql-{best_offered}"])
                _drop_debian_cluster(best_offered)
                chosen = best_offered
            else:
                raise ArtifactError(f"apt offers no postgresql-N package with N <= {wanted}")
        bindir = _installed()[chosen]
        printed = cache.run([str(bindir / "postgres"), "--version"]).strip()
        match = re.search(r"\)\s*(\d+(?:\.\d+)*)", printed)
        notes = [printed]
        if chosen != wanted:
            notes.append(f"pin {wanted} not offered by apt; using {chosen}, the newest it offers")
        entry: cache.Entry = {
            "name": NAME, "requested": str(wanted), "version": match.group(1) if match else printed,
            "path": str(bindir), "root": str(bindir),
            "files": {},  # apt owns these files: recorded, not re-verified (an apt upgrade may change them)
            "size": sum(p.stat().st_size for p in bindir.iterdir() if p.is_file()),
            "sha256": cache.sha256_file(bindir / "postgres"), "source": f"apt postgresql-{chosen}", "notes": notes,
        }
        if cache.load_manifest().get(key) != entry:
            cache.record(key, entry)
        return cache.artifact_from(entry)


def _drop_debian_cluster(major: int) -> None:
    clusters = cache.run(["pg_lsclusters", "--no-header"])
    for line in clusters.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == str(major) and parts[1] == "main":
            cache.run(["pg_dropcluster", "--stop", str(major), "main"])


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="catalog databases and the bookshop's source (logical WAL)",
        container=container, native=native, managed={Target.AWS: "RDS PostgreSQL"},
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_server, source="Debian apt (postgresql-N)"),
        secrets=(SecretSpec("postgres-password", "postgresPassword", "lab-postgres-password",
                            managed_on={Target.AWS: "RDS keeps the master password in Secrets Manager"}),),
    ),
)
