"""The exporter's configuration: which tables and services it watches, how it reaches them, its thresholds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.model.retention import TableBounds
from lakehouse_platform.model.tables import TableSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services import profiles
from lakehouse_platform.services.capabilities import DATABASE, DATABASE_PASSWORD, DATABASE_USER
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext, Side, address
from lakehouse_platform.services.operations_config import table_bounds
from lakehouse_platform.services.registry import registry

NAME = "lakehouse-exporter"


def retention_s(spec: PlatformSpec, bounds: TableBounds) -> float:
    """How long a table's snapshots are meant to live (real seconds): its retention's age where an expire job
    covers it, else the stack's ``observability.snapshot_retention_days`` (what SnapshotsGrowingWithoutExpiry
    measures the oldest snapshot against)."""
    if bounds.expiry_gap_s:  # an expire job covers it (PlatformSpec.table_bounds found it)
        return bounds.max_age_s
    return spec.observability.snapshot_retention_days * 86400.0


def _declared(spec: PlatformSpec, identifier: str) -> TableSpec | None:
    return next((t for t in spec.tables if t.identifier == identifier), None)


def table_watch(spec: PlatformSpec, bounds: TableBounds) -> dict[str, Any]:
    """One table the stack knows, as the exporter watches it: its promise (declared tables), owner and bounds."""
    namespace, _, name = bounds.identifier.rpartition(".")
    declared = _declared(spec, bounds.identifier)
    freshness = declared.freshness_minutes if declared is not None else spec.observability.freshness_minutes
    return {"namespace": namespace, "name": name, "owner": bounds.owner, "declared": declared is not None,
            "freshness_s": freshness * 60, "retention_s": retention_s(spec, bounds),
            "max_snapshots": bounds.max_snapshots, "max_metadata_bytes": bounds.max_metadata_bytes}


def health_of(spec: PlatformSpec, name: str, side: Side) -> dict[str, Any] | None:
    """A service's health check as the exporter runs it (a command check becomes a TCP connect)."""
    service = spec.services[name]
    health = service.health
    port_name = health.port if health is not None and health.port else next(iter(service.ports), None)
    if port_name is None:
        return None
    host, port = address(spec, name, port_name, side).rsplit(":", 1)
    if health is not None and health.kind == "http":
        return {"kind": "http", "url": f"http://{host}:{port}{health.path}"}
    return {"kind": "tcp", "host": host, "port": int(port)}


def catalog_settings(spec: PlatformSpec, side: Side) -> tuple[dict[str, str], dict[str, str]]:
    """(PyIceberg properties, environment) of the exporter's identity (``governance.exporter``, read-only: the spec
    refuses one that could write): secrets stay out of the config file.

    Every credential is ``${ENV:NAME}`` in the properties (the exporter expands it at start) and a whole
    secret in the environment, which every target can inject (ECS from Secrets Manager).
    """
    reader = spec.governance.exporter
    env: dict[str, str] = {}
    known: dict[str, str | tuple[str, str]] = {"s3_access_key": spec.identities[reader].access_key,
             "s3_secret_key": ("S3_SECRET_KEY", f"s3-secret-key-{reader}"),
             "catalog_token": ("CATALOG_TOKEN", f"catalog-token-{reader}")}
    principals = default_catalog(spec).role.principals
    if principals is not None:  # its own principal at the catalog (Polaris), never the catalog's root
        known[principals.id_key] = reader
        known[principals.secret_key] = ("CATALOG_CLIENT_SECRET", principals.secret_name(reader))

    def value(match: Any) -> str:
        name = match.group(1)
        found = known.get(name, (name.upper(), name.replace("_", "-")))  # the platform's own
        if isinstance(found, str):
            return found
        variable, secret_name = found
        env[variable] = secret(secret_name)
        return "${ENV:" + variable + "}"

    props = {k: profiles.PLACEHOLDER.sub(value, v) for k, v in profiles.pyiceberg(spec, side).items()}
    return props, env


#: The exporter's environment variable holding the database's password (``database_watch``).
DATABASE_PASSWORD_ENV = "DATABASE_PASSWORD"  # noqa: S105 - the name of a variable, not its value


def database_watch(spec: PlatformSpec, side: Side) -> dict[str, Any] | None:
    """Where the exporter reads the database's replication slots: the platform's PostgreSQL on docker and native
    (on aws RDS reports its own slot lag to CloudWatch, ``OldestReplicationSlotLag``)."""
    database = registry().provider(spec, DATABASE)
    if database is None or spec.target is Target.AWS:
        return None
    host, port = address(spec, database, "pg", side).rsplit(":", 1)
    return {"host": host, "port": int(port), "user": DATABASE_USER, "password": "${ENV:" + DATABASE_PASSWORD_ENV + "}"}


def secret_env(spec: PlatformSpec, side: Side) -> dict[str, str]:
    """The exporter's secrets as environment variables: its catalog credentials, the database's password."""
    env = dict(catalog_settings(spec, side)[1])
    if database_watch(spec, side) is not None:
        env[DATABASE_PASSWORD_ENV] = secret(DATABASE_PASSWORD)
    return env


def exporter_config(ctx: ServiceContext, side: Side, listen_host: str, state_dir: str | None,
                    runs_path: str | None) -> str:
    """The exporter's config: no secret in it (``catalog_settings``)."""
    spec = ctx.spec
    catalog, _ = catalog_settings(spec, side)
    services = []
    for name in spec.start_order():
        definition = registry()[name]
        if name == NAME or spec.services[name].kind != "server" or definition.native.folded:
            continue
        entry: dict[str, Any] = {"name": name, "health": health_of(spec, name, side),
                                 "disk_budget_bytes": spec.services[name].disk_bytes or 0}
        if state_dir is not None:  # natively: as the native target lays them out
            entry["data_dir"] = str(Path(state_dir) / name)
            entry["log_file"] = str(Path(state_dir) / "logs" / f"{name}.log")
        services.append(entry)
    obs = spec.observability
    bounds = table_bounds(spec)
    return json.dumps({
        "listen_host": listen_host,
        "listen_port": ctx.listen_port("http"),
        "catalog_name": default_catalog(spec).name,
        "catalog": catalog,
        "tables": [table_watch(spec, b) for ident, b in bounds.items() if ident != "*"],
        "default_freshness_s": obs.freshness_minutes * 60,
        "default_retention_s": retention_s(spec, bounds["*"]),
        "default_max_snapshots": bounds["*"].max_snapshots,
        "default_max_metadata_bytes": bounds["*"].max_metadata_bytes,
        "small_file_bytes": obs.small_file_bytes,
        "discover": obs.discover_tables,
        "runs_db": runs_path,
        "maintenance_jobs": sorted({job.action for job in spec.maintenance} | {a for t in spec.tables
                                                                              for a in t.maintenance}),
        "services": services,
        "refresh_interval_s": obs.refresh_interval_s,
        "probe_interval_s": obs.probe_interval_s,
        "request_timeout_s": obs.probe_timeout_s,
        "workers": obs.exporter_workers,
        "disk_interval_s": obs.disk_interval_s,
        "database": database_watch(spec, side),
    }, indent=2)
