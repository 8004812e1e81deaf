"""Stop Kafka Connect's source connectors, their offsets committed, before the broker restarts; resume them after.

Natively the broker's ``LocalService`` runs ``stop`` as its ``pre_stop`` step (before it stops for an update) and
``resume`` after it is healthy again (``post_start``). Why: a source task that runs at least once (a worker without
exactly-once sources, as release 0.3.0's) commits its offsets once per flush interval; a broker that stops in
between leaves the records the task produced since then without their offsets, and the task produces them again
when it runs again: change events doubled (seen in a cold CI rehearsal of the upgrade from 0.3.0, where the
worker's last flush timed out while the broker was down). A connector stopped through Connect's REST API
(KIP-875, ``PUT /connectors/<name>/stop``) commits its tasks' offsets as they stop, while the broker still runs.
An exactly-once worker needs no drain (an aborted transaction is invisible to ``read_committed`` consumers), but
the drain cannot tell the worker's mode and a stop costs seconds, so it always drains.

The connectors it stopped are written to a marker file, which ``resume`` reads: only those are resumed, never one
an operator stopped. Best effort, like Flink's drain (``services.flink.runtime``): the exit code is always 0, and a
connector's own step in the same ``pulumi up`` resumes a declared connector left STOPPED (``connectors``).

Runtime code: it runs on the operations runtime from the stack's copy of the runtime code (ADR 0016), importing
nothing of the project, so it carries the few REST calls it needs itself. The broker runs it (``native.broker_drain``,
the definition's ``RestartDrain``).

    python -m lakehouse_platform.services.kafka_connect.runtime stop <connect url> <marker file> [timeout seconds]
    python -m lakehouse_platform.services.kafka_connect.runtime resume <connect url> <marker file> [timeout seconds]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import requests

POLL_S = 0.5
#: Connect answers 409 while its workers rebalance (after the broker restarted, until the worker rejoined).
REBALANCING = 409


class DrainError(Exception):
    """Connect did not answer, or refused a call; the message says which."""


class Connect:
    """The calls a drain makes: list the connectors with their type and state, stop one, resume one."""

    def __init__(self, url: str, timeout_s: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.trust_env = False  # the worker is on this host: never through a proxy

    def call(self, method: str, path: str) -> tuple[int, Any]:
        try:
            response = self.session.request(method, f"{self.url}{path}", timeout=self.timeout_s)
        except requests.RequestException as exc:
            raise DrainError(f"Kafka Connect {self.url} does not answer ({type(exc).__name__})") from None
        try:
            return response.status_code, response.json() if response.content else None
        except ValueError:
            return response.status_code, response.text

    def sources(self) -> dict[str, str]:
        """Every source connector on the worker -> its connector state (RUNNING, PAUSED, STOPPED, ...)."""
        status, body = self.call("GET", "/connectors?expand=status&expand=info")
        if status != 200 or not isinstance(body, dict):
            raise DrainError(f"GET /connectors answered {status}: {str(body)[:300]}")
        return {name: str(((entry.get("status") or {}).get("connector") or {}).get("state", "UNKNOWN"))
                for name, entry in body.items() if (entry.get("info") or {}).get("type") == "source"}

    def state(self, name: str) -> str:
        status, body = self.call("GET", f"/connectors/{name}/status")
        return str(body["connector"]["state"]) if status == 200 and isinstance(body, dict) else f"HTTP {status}"

    def until_accepted(self, method: str, path: str, deadline: float) -> int:
        """The call, again while Connect rebalances or does not answer yet (its herder busy rejoining the restarted
        broker), until ``deadline``; the last status (the last error raised when it never answered)."""
        while True:
            try:
                status, _ = self.call(method, path)
            except DrainError:
                if time.monotonic() >= deadline:
                    raise
                status = 0
            if (status not in (0, REBALANCING) and status < 500) or time.monotonic() >= deadline:
                return status
            time.sleep(POLL_S)


def stop(url: str, marker: Path, timeout_s: float) -> list[str]:
    """Stop every RUNNING source connector and wait until it is STOPPED; the stopped ones go into ``marker``."""
    connect, deadline = Connect(url), time.monotonic() + timeout_s
    drained = _read(marker)
    lines = []
    for name, state in sorted(connect.sources().items()):
        if state != "RUNNING":
            lines.append(f"{name}: {state}, left alone")
            continue
        status = connect.until_accepted("PUT", f"/connectors/{name}/stop", deadline)
        if status not in (200, 202, 204):
            lines.append(f"{name}: PUT stop answered {status}")
            continue
        drained.append(name)
        _write(marker, drained)  # before the wait: a drain cut short still resumes what it stopped
        while (now := connect.state(name)) != "STOPPED" and time.monotonic() < deadline:
            time.sleep(POLL_S)
        lines.append(f"{name}: {now}" + ("" if now == "STOPPED" else f" after {timeout_s:g}s"))
    return lines


def resume(url: str, marker: Path, timeout_s: float) -> list[str]:
    """Resume the connectors ``marker`` names; the marker goes once every one was accepted."""
    drained = _read(marker)
    if not drained:
        return []
    connect, deadline = Connect(url), time.monotonic() + timeout_s
    left, lines = [], []
    for name in drained:
        try:
            status = connect.until_accepted("PUT", f"/connectors/{name}/resume", deadline)
        except DrainError as exc:
            status, why = 0, str(exc)
        else:
            why = f"PUT resume answered {status}"
        if status in (200, 202, 204, 404):  # 404: deleted meanwhile, nothing to resume
            lines.append(f"{name}: resumed" if status != 404 else f"{name}: gone")
        else:
            left.append(name)
            lines.append(f"{name}: {why}; its step resumes it")
    if left:
        _write(marker, left)
    else:
        marker.unlink(missing_ok=True)
    return lines


def _read(marker: Path) -> list[str]:
    try:
        return [str(name) for name in json.loads(marker.read_text())]
    except (OSError, ValueError):
        return []


def _write(marker: Path, names: list[str]) -> None:
    marker.write_text(json.dumps(sorted(set(names))))


def main(argv: list[str]) -> int:
    action, url, marker = argv[0], argv[1], Path(argv[2])
    timeout_s = float(argv[3]) if len(argv) > 3 else 60.0
    try:
        lines = (stop if action == "stop" else resume)(url, marker, timeout_s)
    except DrainError as exc:
        lines = [str(exc)]
    for line in lines or ["no source connector to " + action]:
        print(f"connect {action}: {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
