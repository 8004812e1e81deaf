"""Prometheus's configuration: what it scrapes and the spec's alert rules."""

from __future__ import annotations

from typing import Any

import yaml

from lakehouse_platform.model import PlatformSpec, parse_size
from lakehouse_platform.services.context import ServiceContext, Side, address
from lakehouse_platform.services.registry import registry

NAME = "prometheus"


def targets(spec: PlatformSpec) -> dict[str, tuple[str, str]]:
    """What Prometheus scrapes: each enabled service that serves metrics (``ServiceDefinition.metrics``), as its job."""
    return {d.name: (d.metrics.port, d.metrics.path) for d in registry()
            if d.metrics is not None and d.metrics.scraped and d.name in spec.enabled_services()}


def scrape_config(spec: PlatformSpec, side: Side, rules_file: str) -> str:
    """prometheus.yml: the stack's scrape and evaluation interval, its rules, its targets (and itself)."""
    interval = f"{spec.observability.scrape_interval_s}s"
    jobs = [{"job_name": name, "metrics_path": path, "static_configs": [{"targets": [address(spec, name, port, side)]}]}
            for name, (port, path) in targets(spec).items()]
    jobs.append({"job_name": "prometheus", "static_configs": [{"targets": [address(spec, NAME, "http", side)]}]})
    timeout = f"{max(1, min(spec.observability.scrape_interval_s, 10))}s"
    document = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": timeout,
                   "external_labels": {"platform": spec.name}},
        "rule_files": [rules_file],
        "scrape_configs": jobs,
    }
    header = "# Generated from the stack's spec (lakehouse_platform/services/prometheus/); do not edit.\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def flags(ctx: ServiceContext, config: str, tsdb: str, listen: str) -> list[str]:
    obs = ctx.spec.observability
    # The size limit in whole megabytes (Prometheus' units are powers of 1024: MB there is MiB).
    size_mb = max(parse_size(obs.retention_size) // (1024 * 1024), 64)
    return [f"--config.file={config}", f"--web.listen-address={listen}", f"--storage.tsdb.path={tsdb}",
            f"--storage.tsdb.retention.time={obs.retention_days}d", f"--storage.tsdb.retention.size={size_mb}MB"]


def stack_outputs(spec: PlatformSpec) -> dict[str, Any]:
    """The alerts every target's metrics store evaluates, by name, in the ``observability`` output."""
    from lakehouse_platform.services.prometheus.alerts import alerts

    return {"observability": {"alerts": [alert.name for alert in alerts(spec)]}}
