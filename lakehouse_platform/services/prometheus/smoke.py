"""Prometheus's line of the smoke check: it scrapes its targets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Its key in the observability output (``ServiceDefinition.metrics``).
OBSERVED = "prometheus"


def smoke(outputs: Mapping[str, Any]) -> list[tuple[str, str, bool, str]]:
    """Prometheus reports each of its scrape targets' health; nothing where it is not reachable from the host."""
    import requests

    prometheus = (outputs.get("observability") or {}).get(OBSERVED)
    if not prometheus:
        return []
    check = "Prometheus scrapes its targets"
    try:
        session = requests.Session()
        session.trust_env = False
        targets = session.get(f"{prometheus}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
        health = {t["labels"]["job"]: t["health"] for t in targets}
        return [("observability", check, bool(health),
                 ", ".join(f"{job} {state}" for job, state in sorted(health.items())))]
    except Exception as exc:  # noqa: BLE001 - a smoke check reports, it does not raise
        return [("observability", check, False, str(exc))]
