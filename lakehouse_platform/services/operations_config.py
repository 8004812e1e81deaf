"""The operations config of a stack, rendered from its spec (``config.OperationsConfig``).

Rendered for one point of view: the host (native processes, the ``operations`` stack output, the
CLI) or a container of the lab (internal addresses, the container's mount points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.model.retention import TableBounds
from lakehouse_platform.placeholders import SECRET_TOKEN
from lakehouse_platform.runtime.config import (
    ENV_SECRET_PREFIX,
    BackupConfig,
    CatalogAccess,
    EngineAccess,
    MaintenanceJobConfig,
    OperationsConfig,
    PostgresSource,
    RecoveryObjectives,
    RetentionConfig,
    SqliteSource,
)
from lakehouse_platform.services import profiles
from lakehouse_platform.services.capabilities import (
    CHANGE_CAPTURE,
    DATABASE,
    DATABASE_BACKUP_USER,
    DATABASE_USER,
    SQL_ENGINE,
    STREAMING_WRITER,
)
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext, Side, host_of, port_of
from lakehouse_platform.services.definition import ServiceDefinition
from lakehouse_platform.services.registry import registry


@dataclass(frozen=True)
class Paths:
    """Where the operating layers keep their files, as the process that reads the config sees them."""

    state_dir: str
    operations_dir: str  # runs.db and locks/
    backups_dir: str
    sqlite: dict[str, str]  # catalog service -> its SQLite file
    pg_bindir: str | None = None


def host_paths(spec: PlatformSpec, state_dir: str, pg_bindir: str | None = None) -> Paths:
    """The host's view: everything under the stack's state directory."""
    from pathlib import Path

    sqlite = {}
    for name, definition in registry().catalogs().items():
        role = definition.catalog
        if role is not None and role.sqlite_file is not None and name in spec.enabled_services():
            path = role.sqlite_file(ServiceContext(spec, name), Path(state_dir))
            if path is not None:
                sqlite[name] = path
    return Paths(state_dir=state_dir, operations_dir=f"{state_dir}/operations", backups_dir=f"{state_dir}/backups",
                 sqlite=sqlite, pg_bindir=pg_bindir)


def catalog_databases(spec: PlatformSpec) -> list[str]:
    """The production catalogs' databases on the platform's PostgreSQL (there whether or not the catalog runs)."""
    wanted = [d.catalog.database for d in registry().catalogs().values() if d.catalog and d.catalog.database]
    return [db for db in registry().databases() if db in wanted]


def maintenance_engine(spec: PlatformSpec) -> tuple[str, ServiceDefinition] | None:
    """The enabled SQL engine the maintenance runs through (the ``SQL_ENGINE`` provider), with its definition."""
    name = registry().provider(spec, SQL_ENGINE)
    return (name, registry()[name]) if name else None


def engine_client(definition: ServiceDefinition, spec: PlatformSpec, side: Side) -> dict[str, Any]:
    """The SQL engine's client profile from one side (its ``ClientProfile``: host, port, scheme, certificate)."""
    assert definition.profile is not None and definition.profile.client is not None, \
        f"{definition.name} provides {SQL_ENGINE.name} without a client profile"
    return dict(definition.profile.client(spec, side))


def engine_password(definition: ServiceDefinition, identity: str) -> str:
    """The secret holding an identity's password at the SQL engine (its first per-identity secret)."""
    secrets = definition.governance.identity_secrets
    assert secrets, f"{definition.name} provides {SQL_ENGINE.name} without per-identity secrets"
    return secrets[0].secret_name(identity)


def env_reference(secret_name: str) -> str:
    """``${ENV:LAKEHOUSE_SECRET_<NAME>}``: where an operations process finds a secret (``operation_secrets``)."""
    return "${ENV:" + ENV_SECRET_PREFIX + secret_name.replace("-", "_").upper() + "}"


def operations_identity(spec: PlatformSpec) -> str:
    """Who the operations act as at the gate, at the SQL engine and at the store: ``governance.maintenance``, the least
    identity that does maintenance's job (the spec refuses the platform's own, and one that cannot write where
    maintenance runs)."""
    return spec.governance.maintenance


def catalog_properties(spec: PlatformSpec, side: Side) -> dict[str, str]:
    """PyIceberg properties of the operations, as ``operations_identity``; secrets as environment references.

    The S3 key pair is the operations' own (``Credentials``), not in the file.
    """
    props = profiles.pyiceberg(spec, side)
    for key in ("s3.access-key-id", "s3.secret-access-key"):
        props.pop(key, None)
    props.update({k: SECRET_TOKEN.sub(lambda m: env_reference(m.group(1)), v)
                  for k, v in profiles.client_secrets(spec, operations_identity(spec)).items()})
    return props


def operation_secrets(spec: PlatformSpec) -> list[str]:
    """The secrets the operations config references (the catalog's credential and token, the SQL engine's password
    and certificate): each an environment variable of the operations processes."""
    identity = operations_identity(spec)
    names = [n for v in profiles.client_secrets(spec, identity).values() for n in SECRET_TOKEN.findall(v)]
    if (engine := maintenance_engine(spec)) is not None:
        client = engine_client(engine[1], spec, Side.EXTERNAL)
        names.append(engine_password(engine[1], identity))
        if client.get("certificate"):
            names.append(f"{client['certificate']}-cert")
    return list(dict.fromkeys(names))


def table_bounds(spec: PlatformSpec) -> dict[str, TableBounds]:
    """Every table the stack knows with its retention (``PlatformSpec.table_bounds``): the declared ones, the
    streaming job's where a streaming writer runs, the Iceberg sinks' where Connect (or MSK Connect) runs; ``*``
    for any other."""
    sinks = registry().provider(spec, CHANGE_CAPTURE) is not None or (spec.target is Target.AWS
                                                                        and spec.aws.kafka_msk)
    return spec.table_bounds(flink_job=registry().provider(spec, STREAMING_WRITER) is not None, sinks=sinks)


def retention_config(found: TableBounds) -> RetentionConfig:
    return RetentionConfig(identifier=found.identifier, keep_last=found.keep_last, max_age_s=found.max_age_s,
                           max_snapshots=found.max_snapshots)


def maintenance_job_ids(spec: PlatformSpec) -> list[str]:
    """Each ``maintenance`` entry's job id: its action, suffixed with its index where the action is listed twice."""
    return [job.action if sum(j.action == job.action for j in spec.maintenance) == 1 else f"{job.action}-{index}"
            for index, job in enumerate(spec.maintenance)]


def operations_config(spec: PlatformSpec, stack: str, paths: Paths, side: Side = Side.EXTERNAL) -> OperationsConfig:
    """Everything the operating layers' processes and commands read, for one point of view."""
    default = default_catalog(spec)
    role = default.role
    catalog = CatalogAccess(service=default.name, engine_name=role.engine_name,
                            properties=catalog_properties(spec, side), tables_location=role.tables_location(spec))
    engine_access = None
    if (engine := maintenance_engine(spec)) is not None:
        name, definition = engine
        client = engine_client(definition, spec, side)
        identity = operations_identity(spec)
        # Its own catalog at the engine where the engine has one per identity (Trino's catalog_of), else the name.
        own_catalog = (client.get("catalog_of") or {}).get(default.name, {}).get(identity) or role.engine_name
        assert definition.runtime is not None, \
            f"{name} provides {SQL_ENGINE.name} without runtime code (ServiceDefinition.runtime: statement, executor)"
        certificate = client.get("certificate")
        engine_access = EngineAccess(host=client["host"], port=client["port"], catalog=own_catalog,
                                     runtime=definition.runtime, engine=name, user=identity,
                                     http_scheme=client["http_scheme"],
                                     password=env_reference(engine_password(definition, identity)),
                                     certificate=env_reference(f"{certificate}-cert") if certificate else None)
    bounds = table_bounds(spec)
    jobs = [MaintenanceJobConfig(id=job_id, action=job.action, schedule=job.schedule,
                                 older_than_days=job.older_than_days, scope=job.scope)
            for job_id, job in zip(maintenance_job_ids(spec), spec.maintenance, strict=True)]
    backups = None
    if spec.target is not Target.AWS:
        postgres = None
        database = registry().provider(spec, DATABASE)
        if database is not None and catalog_databases(spec):
            postgres = PostgresSource(host=host_of(spec, database, side), port=port_of(spec, database, "pg", side),
                                      user=DATABASE_USER, databases=catalog_databases(spec), bindir=paths.pg_bindir,
                                      dump_user=DATABASE_BACKUP_USER)
        backups = BackupConfig(dir=paths.backups_dir, schedule=spec.recovery.backup_schedule,
                               retention_days=spec.recovery.backup_retention_days,
                               sqlite=[SqliteSource(name=n, path=p) for n, p in paths.sqlite.items()],
                               postgres=postgres)
    return OperationsConfig(
        stack=stack, target=spec.target.value, state_dir=paths.state_dir,
        runs_db=f"{paths.operations_dir}/runs.db", locks_dir=f"{paths.operations_dir}/locks",
        catalog=catalog, engine=engine_access, maintenance=jobs, tables=[spec.declaration(t) for t in spec.tables],
        retention=[retention_config(b) for ident, b in bounds.items() if ident != "*"],
        default_retention=retention_config(bounds["*"]), speedup=spec.maintenance_speedup, backups=backups,
        recovery=RecoveryObjectives(rpo_minutes=spec.recovery.rpo_minutes, rto_minutes=spec.recovery.rto_minutes),
    )
