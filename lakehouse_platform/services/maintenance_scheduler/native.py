"""The maintenance scheduler natively: the project's Python, supervised."""

from __future__ import annotations

from lakehouse_platform.runtime.config import CONFIG_FILE
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.maintenance_scheduler.config import ROLE
from lakehouse_platform.services.plans import NativeHost, NativePlan


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``python -m lakehouse_platform.runtime scheduler --role maintenance`` from the project, on loopback."""
    assert host.state_dir is not None and host.code_root is not None
    port = ctx.listen_port("http")
    config_path = host.home / CONFIG_FILE
    return NativePlan(
        argv=[host.python, "-m", "lakehouse_platform.runtime", "scheduler", "--config", str(config_path), "--role",
              ROLE,
              "--listen", f"127.0.0.1:{port}"],
        env={"PYTHONPATH": str(host.code_root), "PYTHONUNBUFFERED": "1",
             **support.maintenance_store_env(ctx.spec), **support.catalog_secret_env(ctx.spec)},
        files={str(config_path): support.native_config(ctx.spec, host).dump()},
        health={"kind": "http", "url": f"http://127.0.0.1:{port}/healthz", "expect_status": 200},
        stop_grace_s=60.0,  # SIGTERM waits for a running job to finish its commit
    )
