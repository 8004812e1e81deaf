"""Reading the observability layer as its users do: the exporter's metrics and Prometheus' alerts."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import requests

T = TypeVar("T")


def session() -> requests.Session:
    found = requests.Session()
    found.trust_env = False  # loopback: no proxy, no CA bundle from the environment
    return found


def samples(exporter_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample the exporter serves: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    text = session().get(exporter_url, timeout=10).text
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def table_metric(exporter_url: str, name: str, namespace: str, table: str) -> float | None:
    """One per-table metric (``iceberg_table_<name>``) of one table, or None when the exporter has none."""
    for (metric, labels), value in samples(exporter_url).items():
        found = dict(labels)
        if metric == f"iceberg_table_{name}" and found.get("namespace") == namespace and found.get("table") == table:
            return value
    return None


def metric(exporter_url: str, name: str, **labels: str) -> float | None:
    for (found, found_labels), value in samples(exporter_url).items():
        if found == name and all(dict(found_labels).get(k) == v for k, v in labels.items()):
            return value
    return None


@dataclass
class Alert:
    name: str
    state: str  # pending | firing
    labels: dict[str, str]
    active_at: str


def alerts(prometheus_url: str) -> list[Alert]:
    """Prometheus' active alerts (GET /api/v1/alerts)."""
    data = session().get(f"{prometheus_url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    return [Alert(a["labels"].get("alertname", "?"), a["state"], a["labels"], a.get("activeAt", "")) for a in data]


def alert_state(prometheus_url: str, name: str, **labels: str) -> str | None:
    """``firing``, ``pending`` or None for the alert ``name`` whose labels include ``labels``."""
    states = [a.state for a in alerts(prometheus_url)
              if a.name == name and all(a.labels.get(k) == v for k, v in labels.items())]
    if "firing" in states:
        return "firing"
    return "pending" if states else None


def wait_for(check: Callable[[], T | None], timeout_s: float, interval_s: float = 1.0) -> tuple[T | None, float]:
    """Poll ``check`` until it returns something truthy or ``timeout_s`` passes: (result, seconds waited)."""
    started = time.monotonic()
    while True:
        try:
            result = check()
        except (requests.RequestException, ValueError, KeyError):
            result = None
        waited = time.monotonic() - started
        if result or waited >= timeout_s:
            return result, waited
        time.sleep(interval_s)


def observability(outputs: dict[str, Any]) -> dict[str, Any]:
    return outputs.get("observability") or {}
