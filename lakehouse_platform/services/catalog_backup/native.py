"""The catalog backups natively: the project's Python with the platform PostgreSQL's own pg_dump."""

from __future__ import annotations

from lakehouse_platform.runtime.config import CONFIG_FILE
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.capabilities import DATABASE
from lakehouse_platform.services.catalog_backup.config import ROLE, _postgres_env
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import NativeHost, NativePlan
from lakehouse_platform.services.registry import registry


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``python -m lakehouse_platform.runtime scheduler --role backup`` with the platform PostgreSQL's pg_dump."""
    assert host.code_root is not None
    port = ctx.listen_port("http")
    config_path = host.home / CONFIG_FILE
    database = registry().provider(ctx.spec, DATABASE)  # its pg_dump: the database server's own
    postgres = host.artifacts.get(database) if database else None
    config = support.native_config(ctx.spec, host, str(postgres.path) if postgres else None)
    return NativePlan(
        argv=[host.python, "-m", "lakehouse_platform.runtime", "scheduler", "--config", str(config_path), "--role",
              ROLE,
              "--listen", f"127.0.0.1:{port}"],
        env={"PYTHONPATH": str(host.code_root), "PYTHONUNBUFFERED": "1", **_postgres_env(ctx)},
        files={str(config_path): config.dump()},
        health={"kind": "http", "url": f"http://127.0.0.1:{port}/healthz", "expect_status": 200},
        stop_grace_s=30.0,
    )
