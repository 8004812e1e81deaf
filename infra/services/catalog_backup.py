"""Catalog backups on a schedule (recovery): the fixture's SQLite by online backup, the catalog databases by pg_dump.

Runs ``python -m infra.operations scheduler --role backup``: every ``recovery.backup_schedule``
(cron, UTC) it backs up each catalog database of the stack into ``<state>/backups/<source>/``
with a sha256 sidecar, records the run (job ``backup-catalog``) and deletes backups older than
``recovery.backup_retention_days`` (the newest always stays); see ``infra/operations/backup.py``.
The way back is ``python -m infra.operations recovery restore|rebuild`` (README, Recovery).

Natively it is the project's own Python, with the platform PostgreSQL's own ``pg_dump`` (the
postgres artifact). In the lab it runs in the operations image, built with the client tools of the lab
server's major. On aws the catalog database is RDS and AWS Backup keeps it (``infra/targets/aws/recovery.py``).
"""

from __future__ import annotations

from infra.operations.config import CONFIG_FILE, ENV_PG_PASSWORD
from infra.services import operations_support as support
from infra.services.base import (
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    secret,
)
from infra.spec import Target

NAME = "catalog-backup"
ROLE = "backup"
POSTGRES = "postgres"

DEFAULT = {
    "layer": "recovery",
    "role": "backs up the catalogs' databases on the recovery schedule, checksummed, kept per the promise",
    "version": support.APSCHEDULER_VERSION,
    # pg_dump of the server's major: the operations image is built with it (its PG_MAJOR build argument).
    "image": support.OPERATIONS_IMAGE,
    "ports": {"http": {"internal": 8791}},
    "health": {"kind": "http", "port": "http", "path": "/healthz",
               "command": support.container_health_command(8791), "start_period_s": 300, "ready_timeout_s": 600},
    "memory": "128MiB",
}


def _postgres_env(ctx: ServiceContext) -> dict[str, str]:
    return {ENV_PG_PASSWORD: secret("postgres-password")} if ctx.enabled(POSTGRES) else {}


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``python -m infra.operations scheduler --role backup`` with the platform PostgreSQL's pg_dump."""
    assert host.project_root is not None
    port = ctx.listen_port("http")
    config_path = host.home / CONFIG_FILE
    postgres = host.artifacts.get(POSTGRES)
    config = support.native_config(ctx.spec, host, str(postgres.path) if postgres else None)
    return NativePlan(
        argv=[host.python, "-m", "infra.operations", "scheduler", "--config", str(config_path), "--role", ROLE,
              "--listen", f"127.0.0.1:{port}"],
        env={"PYTHONPATH": str(host.project_root), "PYTHONUNBUFFERED": "1", **_postgres_env(ctx)},
        files={str(config_path): config.dump()},
        health={"kind": "http", "url": f"http://127.0.0.1:{port}/healthz", "expect_status": 200},
        stop_grace_s=30.0,
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    port = ctx.listen_port("http")
    return support.container_plan(ctx, host, ROLE, port, env=_postgres_env(ctx))


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="scheduled catalog backups (SQLite online backup, pg_dump), sha256",
        container=container, native=native,
        managed={Target.AWS: "AWS Backup: continuous backup of the RDS catalog database "
                             "(infra/targets/aws/recovery.py)"},
    ),
)
