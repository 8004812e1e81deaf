"""The metrics exporter: the tables' metadata and the platform's own records turned into signals (observability).

The process is ``infra/operations/exporter.py``; this module renders what it watches from the spec:
the default catalog as the read-only identity (``governance.reader``: watching never writes), every
declared table with its freshness promise and retention, the stack's defaults for undeclared tables,
the run record the scheduler and on-demand operations write (``infra.operations.runs``), and every
other service of the stack with its health check and, natively, its watchdog's status file.

Whole definition: defaults, the config, the local process (the project's Python, supervised like every
native service), the container (the platform's operations image, built from this repository), and the
ECS task (the same image, pushed by the deploying pipeline).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra import profiles
from infra.operations.runs import runs_db
from infra.paths import PROJECT_ROOT
from infra.services import operations_support as support
from infra.services.base import (
    ContainerHost,
    ContainerPlan,
    EcsPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    Side,
    address,
    code_digest,
    secret,
)
from infra.services.registry import registry
from infra.spec import PlatformSpec, Target
from infra.spec.tables import TableSpec

NAME = "lakehouse-exporter"
IMAGE_CONFIG = "/etc/lakehouse/exporter.json"
IMAGE_OPERATIONS = "/var/lib/lakehouse/operations"  # the run record, mounted from the stack's state
#: What the process runs from the repository (a change restarts it).
CODE = tuple(PROJECT_ROOT / "infra" / part for part in ("operations/exporter.py", "operations/runs.py",
                                                        "targets/native/watchdog.py"))

DEFAULT = {
    "layer": "observability",
    "role": "table and service signals from the Iceberg metadata and the platform's own records",
    "version": "0.3.0",  # the project's own (pyproject.toml)
    "image": support.OPERATIONS_IMAGE,  # built from docker/operations.Dockerfile
    "ports": {"http": {"internal": 9464, "external": 9464}},
    "health": {"kind": "http", "port": "http", "path": "/metrics",
               "command": ["CMD", "python", "-c", "import urllib.request; "
                           "urllib.request.urlopen('http://127.0.0.1:9464/metrics', timeout=3)"]},
    "memory": "384MiB",
}


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
    """(PyIceberg properties, environment) of the reader identity: secrets stay out of the config file.

    Every credential is ``${ENV:NAME}`` in the properties (the exporter expands it at start) and a whole
    secret in the environment, which every target can inject (ECS from Secrets Manager).
    """
    reader = spec.governance.reader
    env: dict[str, str] = {}
    known = {"s3_access_key": spec.identities[reader].access_key,
             "s3_secret_key": ("S3_SECRET_KEY", f"s3-secret-key-{reader}"),
             "catalog_token": ("CATALOG_TOKEN", f"catalog-token-{reader}")}

    def value(match: Any) -> str:
        name = match.group(1)
        found = known.get(name, (name.upper(), name.replace("_", "-")))  # the platform's own, e.g. polaris_root_secret
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
        if name == NAME or spec.services[name].kind != "server" or definition.native_folded:
            continue
        entry: dict[str, Any] = {"name": name, "health": health_of(spec, name, side)}
        if state_dir is not None:
            entry["data_dir"] = str(Path(state_dir) / name)
        services.append(entry)
    obs = spec.observability
    return json.dumps({
        "listen_host": listen_host,
        "listen_port": ctx.listen_port("http"),
        "catalog_name": spec.catalog.default,
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
        "workers": obs.exporter_workers,
    }, indent=2)


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    assert host.state_dir is not None and ctx.service.health is not None
    config = host.home / "exporter.json"
    return NativePlan(
        argv=[host.python, "-m", "infra.operations.exporter", "--config", str(config)],
        env={"PYTHONPATH": str(host.project_root), "PYTHONUNBUFFERED": "1", "LAKEHOUSE_CODE": code_digest(*CODE),
             **catalog_settings(ctx.spec, Side.INTERNAL)[1]},
        files={str(config): exporter_config(ctx, Side.INTERNAL, "127.0.0.1", str(host.state_dir),
                                            str(runs_db(host.state_dir)))},
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=5.0,
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The operations image, as the operations' user: it reads the run record the schedulers write."""
    return support.operations_plan(
        command=["python", "-m", "infra.operations.exporter", "--config", IMAGE_CONFIG],
        env=catalog_settings(ctx.spec, Side.INTERNAL)[1],
        uploads={IMAGE_CONFIG: exporter_config(ctx, Side.INTERNAL, "0.0.0.0", None,  # noqa: S104 - in its container
                                               f"{IMAGE_OPERATIONS}/runs.db")},
        bind_mounts={"operations": IMAGE_OPERATIONS})


def ecs(ctx: ServiceContext) -> EcsPlan:
    """On Fargate: the same image (pushed to the registry ``services.lakehouse-exporter.image`` names)."""
    config = exporter_config(ctx, Side.INTERNAL, "0.0.0.0", None, None)  # noqa: S104 - in its task
    return EcsPlan(env={"AWS_REGION": ctx.spec.aws.region, **catalog_settings(ctx.spec, Side.INTERNAL)[1]},
                   command=["python", "-m", "infra.operations.exporter", "--config", IMAGE_CONFIG],
                   files={IMAGE_CONFIG: config})


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="table and service signals for Prometheus (reads as the reader)",
        container=container, native=native, ecs=ecs,
        unavailable={},
    ),
)

__all__ = ["NAME", "SERVICES", "Target", "exporter_config", "retention_days"]
