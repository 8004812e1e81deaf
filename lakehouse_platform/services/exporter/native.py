"""The exporter natively: the project's Python on 127.0.0.1."""

from __future__ import annotations

from lakehouse_platform.paths import PACKAGE_DIR
from lakehouse_platform.runtime.runs import runs_db
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.exporter.config import NAME, exporter_config, secret_env
from lakehouse_platform.services.plans import NativeHost, NativePlan, code_digest

#: What the process runs from the package (a change restarts it).
CODE = (*sorted((PACKAGE_DIR / "runtime" / "exporter").glob("*.py")),
        *(PACKAGE_DIR / "runtime" / name for name in ("runs.py", "watchdog.py")))


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    assert host.state_dir is not None and ctx.service.health is not None
    config = host.home / "exporter.json"
    return NativePlan(
        argv=[host.python, "-m", "lakehouse_platform.runtime.exporter", "--config", str(config)],
        env={"PYTHONPATH": str(host.code_root), "PYTHONUNBUFFERED": "1", "LAKEHOUSE_CODE": code_digest(*CODE),
             **secret_env(ctx.spec, Side.INTERNAL)},
        files={str(config): exporter_config(ctx, Side.INTERNAL, "127.0.0.1", str(host.state_dir),
                                            str(runs_db(host.state_dir)))},
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=5.0,
    )
