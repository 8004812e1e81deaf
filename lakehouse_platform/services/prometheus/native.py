"""Prometheus natively: Debian's binary on 127.0.0.1."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.plans import NativeHost, NativePlan
from lakehouse_platform.services.prometheus.alerts import rules_yaml
from lakehouse_platform.services.prometheus.config import NAME, flags, scrape_config


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    assert host.artifact is not None and ctx.service.health is not None
    config, rules, tsdb = host.home / "prometheus.yml", host.home / "rules.yml", host.home / "tsdb"
    return NativePlan(
        argv=[str(host.artifact.path), *flags(ctx, str(config), str(tsdb), ctx.address(NAME, "http"))],
        files={str(config): scrape_config(ctx.spec, Side.INTERNAL, str(rules)), str(rules): rules_yaml(ctx.spec)},
        setup=[["mkdir", "-p", str(tsdb)]],
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=15.0,
    )
