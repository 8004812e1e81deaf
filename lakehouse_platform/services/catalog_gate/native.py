"""The catalog gate natively: the project's Python, supervised like every native service."""

from __future__ import annotations

from lakehouse_platform.services.catalog_gate.config import GATE_MODULE, GATE_SOURCE, NAME, gate_config, signing_env
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import NativeHost, NativePlan, code_digest


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    config = host.home / "catalog-gate.json"
    assert ctx.service.health is not None and host.code_root is not None
    return NativePlan(
        argv=[host.python, "-m", GATE_MODULE, "--config", str(config)],
        files={str(config): gate_config(ctx, "127.0.0.1")},
        env={"PYTHONPATH": str(host.code_root), "PYTHONUNBUFFERED": "1",
             "LAKEHOUSE_CODE": code_digest(GATE_SOURCE),  # a change of the gate's code restarts it
             **signing_env()},
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=5.0,
    )
