"""Prometheus on docker: the pinned image, its config and rules uploaded."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.prometheus.alerts import rules_yaml
from lakehouse_platform.services.prometheus.config import flags, scrape_config

IMAGE_ETC = "/etc/prometheus"


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    config, rules = f"{IMAGE_ETC}/prometheus.yml", f"{IMAGE_ETC}/rules.yml"
    return ContainerPlan(
        command=flags(ctx, config, "/prometheus", f"0.0.0.0:{ctx.listen_port('http')}"),
        uploads={config: scrape_config(ctx.spec, Side.INTERNAL, rules), rules: rules_yaml(ctx.spec)},
        volumes={"data": "/prometheus"},
    )
