"""What the post-deploy probes ask of Prometheus: its version, from its build info."""

from __future__ import annotations

from collections.abc import Mapping

from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading, first_version, http_json
from lakehouse_platform.services.prometheus.config import NAME


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """``GET /api/v1/status/buildinfo``; nothing where the host cannot reach it."""
    address = stack.endpoint(NAME, "http")
    if address is None:
        return {}
    info = http_json(f"http://{address}/api/v1/status/buildinfo")["data"]
    return {NAME: VersionReading(first_version(info.get("version", "")),
                                 f"GET http://{address}/api/v1/status/buildinfo ({info.get('version')})")}
