"""The exporter's configuration: which tables and services it watches, how it reaches them, its thresholds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.model.tables import TableSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services import profiles
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext, Side, address
from lakehouse_platform.services.registry import registry

NAME = "lakehouse-exporter"


def retention_days(spec: PlatformSpec, table: TableSpec | None = None) -> int:
    """How long a table's snapshots are meant to live: its expire job's threshold, else the stack's default."""
    expire = [job for job in spec.maintenance if job.action == "expire_snapshots"]
    if expire and (table is None or "expire_snapshots" in table.maintenance):
        return max(job.older_than_days for job in expire)
    return spec.observability.snapshot_retention_days


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
        entry: dict[str, Any] = {"name": name, "health": health_of(spec, name, side)}
        if state_dir is not None:
            entry["data_dir"] = str(Path(state_dir) / name)
        services.append(entry)
    obs = spec.observability
    return json.dumps({
        "listen_host": listen_host,
        "listen_port": ctx.listen_port("http"),
        "catalog_name": default_catalog(spec).name,
        "catalog": catalog,
        "tables": [{"namespace": t.namespace, "name": t.name, "owner": t.owner, "freshness_s": t.freshness_minutes * 60,
                    "retention_s": retention_days(spec, t) * 86400} for t in spec.tables],
        "default_freshness_s": obs.freshness_minutes * 60,
        "default_retention_s": retention_days(spec) * 86400,
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
    }, indent=2)
