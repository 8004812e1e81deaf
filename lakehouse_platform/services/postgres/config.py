"""PostgreSQL's configuration on every target: the databases it holds, server settings (logical WAL for
Debezium), the replication slots the stack declares, and the backups' least role.
"""

from __future__ import annotations

from lakehouse_platform.model import PlatformSpec, parse_size
from lakehouse_platform.services.capabilities import CHANGE_CAPTURE, DATABASE_BACKUP_USER, DATABASE_USER
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.registry import registry

NAME = "postgres"


def databases() -> tuple[str, ...]:
    """The databases the platform's services keep here (``Registry.databases``), created whether or not each
    service runs (a catalog enabled later finds its database)."""
    return registry().databases()


# Logical WAL so Debezium can capture the bookshop's changes.
SERVER_SETTINGS = {"wal_level": "logical", "max_wal_senders": "10", "max_replication_slots": "10",
                   # The catalogs' and the bookshop's working set is small: 64MB of buffers, not 128MB.
                   "shared_buffers": "64MB"}


def megabytes(size: str) -> int:
    """A size as PostgreSQL's whole megabytes (its unit for WAL sizes; ``parse_size`` reads the unit)."""
    return max(1, parse_size(size) // 1_000_000)


def disk_settings(spec: PlatformSpec) -> dict[str, str]:
    """What bounds the server's disk, as settings every target applies (RDS: its parameter group): the WAL a
    checkpoint lets grow (``catalog.database``), the WAL a replication slot may hold back
    (``streams.slot_max_wal_keep_size``), autovacuum's visits."""
    return {**spec.catalog.database.server_settings(),
            "max_slot_wal_keep_size": f"{megabytes(spec.streams.slot_max_wal_keep_size)}MB"}


def server_settings(spec: PlatformSpec) -> dict[str, str]:
    """Every server setting of the lab and native servers: logical WAL, and the disk's bounds."""
    return {**SERVER_SETTINGS, **disk_settings(spec)}


def major_of(ctx: ServiceContext) -> int:
    return int(ctx.service.version.split(".")[0])


def create_databases_sql() -> str:
    """Idempotent: creates each database only where it is missing (psql's \\gexec)."""
    return "".join(
        f"SELECT 'CREATE DATABASE {db}' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{db}')\\gexec\n"  # noqa: S608 - fixed names
        for db in databases()
    )


#: The environment variable the init SQL reads the backup role's password from (psql's ``\\getenv``: never in a file).
BACKUP_PASSWORD_ENV = "LAKEHOUSE_BACKUP_PASSWORD"  # noqa: S105 - the name of a variable, not its value


def backup_role_sql(ctx: ServiceContext) -> str:
    """Idempotent psql: the backups' role, and on each catalog database the rights ``pg_dump`` needs and no more.

    Not a superuser, and not ``pg_read_all_data`` either: that role reads every table of every database, the
    bookshop's source included. Per catalog database instead: CONNECT, USAGE on its schemas, SELECT on its tables
    and sequences (what ``pg_dump`` reads and locks), and the same by default on what the catalogs (as
    ``DATABASE_USER``) create later. Run after every start natively, at the cluster's creation in the lab.
    """
    from lakehouse_platform.services.operations_config import catalog_databases

    role = DATABASE_BACKUP_USER
    lines = [f"SELECT 'CREATE ROLE {role}' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}')\\gexec",  # noqa: S608 - fixed names
             f"\\getenv backup_password {BACKUP_PASSWORD_ENV}",
             f"ALTER ROLE {role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
             "NOINHERIT PASSWORD :'backup_password';"]
    for database in catalog_databases(ctx.spec):
        lines += [f"\\connect {database}",
                  f"GRANT CONNECT ON DATABASE {database} TO {role};",
                  "DO $$DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE "  # noqa: S608 - fixed names
                  "'pg\\_%' AND nspname <> 'information_schema' LOOP "
                  f"EXECUTE format('GRANT USAGE ON SCHEMA %I TO {role}', s); "
                  f"EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO {role}', s); "
                  f"EXECUTE format('GRANT SELECT ON ALL SEQUENCES IN SCHEMA %I TO {role}', s); END LOOP; END$$;",
                  *(f"ALTER DEFAULT PRIVILEGES FOR ROLE {DATABASE_USER} GRANT {what} TO {role};"
                    for what in ("USAGE ON SCHEMAS", "SELECT ON TABLES", "SELECT ON SEQUENCES"))]
    lines.append("\\connect postgres")
    return "".join(f"{line}\n" for line in lines)


def declared_slots(ctx: ServiceContext) -> list[str]:
    """The logical replication slots the stack's enabled CDC connectors own."""
    from lakehouse_platform.model.streams import DebeziumPostgresSpec

    if registry().provider(ctx.spec, CHANGE_CAPTURE) is None:
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
