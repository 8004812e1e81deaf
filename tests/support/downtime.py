"""Each service's downtime while a stack changes: its own health check polled from the host, outages measured.

What is polled is what the native target itself waits for (each ``LocalService``'s recorded ``health``, read from
the stack's state), plus the platform's work that is not a process: the streaming job (RUNNING on the job manager)
and every connector (RUNNING, all tasks, on Connect). Used by the upgrade and the version-bump tests, which print
``report()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

#: Seconds between two polls of one service.
INTERVAL_S = 0.25
#: A single probe is bounded, so a hung service reads as down, not as a stuck poller.
PROBE_TIMEOUT_S = 1.0


@dataclass
class Outages:
    """One service's polls: when it answered and when it did not."""

    name: str
    polls: int = 0
    failures: int = 0
    spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each outage, monotonic
    _down_since: float | None = None
    last_error: str = ""

    def record(self, ok: bool, at: float, error: str = "") -> None:
        self.polls += 1
        if ok:
            if self._down_since is not None:
                self.spans.append((self._down_since, at))
                self._down_since = None
        else:
            self.failures += 1
            self.last_error = error
            if self._down_since is None:
                self._down_since = at

    def close(self, at: float) -> None:
        """End the observation; an outage still open counts until ``at`` (and ``still_down`` says so)."""
        if self._down_since is not None:
            self.spans.append((self._down_since, at))

    @property
    def still_down(self) -> bool:
        return self._down_since is not None

    @property
    def down_s(self) -> float:
        return sum(end - start for start, end in self.spans)

    @property
    def longest_s(self) -> float:
        return max((end - start for start, end in self.spans), default=0.0)


def service_checks(state_resources: list[dict[str, Any]]) -> dict[str, Callable[[], None]]:
    """A check per ``LocalService`` of an exported stack: its own recorded health probe (raises when down)."""
    from lakehouse_platform.targets.native import local_service

    checks: dict[str, Callable[[], None]] = {}
    for resource in state_resources:
        if not resource["type"].endswith("native:LocalService"):
            continue
        outputs = resource.get("outputs") or {}
        health, name = outputs.get("health"), outputs.get("service")
        if not health or not name:
            continue

        def check(health: Mapping[str, Any] = health) -> None:
            local_service.probe_health(health, PROBE_TIMEOUT_S)

        checks[str(name)] = check
    return checks


def flink_job_check(rest_url: str, job_name: str) -> Callable[[], None]:
    """Down unless a job called ``job_name`` is RUNNING with every task RUNNING."""

    def check() -> None:
        session = requests.Session()
        session.trust_env = False
        jobs = session.get(f"{rest_url}/jobs/overview", timeout=PROBE_TIMEOUT_S).json().get("jobs", [])
        running = [j for j in jobs if j.get("name") == job_name and j.get("state") == "RUNNING"]
        if not running:
            raise RuntimeError(f"no RUNNING job {job_name}")
        tasks = running[0].get("tasks", {})
        if not tasks.get("total") or tasks.get("running") != tasks.get("total"):
            raise RuntimeError(f"tasks {tasks}")

    return check


def connectors_check(connect_url: str, names: list[str]) -> Callable[[], None]:
    """Down unless every connector in ``names`` and all its tasks are RUNNING."""

    def check() -> None:
        session = requests.Session()
        session.trust_env = False
        status = session.get(f"{connect_url}/connectors?expand=status", timeout=PROBE_TIMEOUT_S).json()
        for name in names:
            body = status.get(name, {}).get("status", {})
            states = {body.get("connector", {}).get("state"), *(t.get("state") for t in body.get("tasks", []))}
            if states != {"RUNNING"} or not body.get("tasks"):
                raise RuntimeError(f"{name}: {sorted(str(s) for s in states)}")

    return check


class DowntimePoller:
    """Polls every check in a thread of its own, from ``start()`` to ``stop()``."""

    def __init__(self, checks: Mapping[str, Callable[[], None]], interval_s: float = INTERVAL_S):
        self.checks = dict(checks)
        self.interval_s = interval_s
        self.outages = {name: Outages(name) for name in self.checks}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.started = self.stopped = 0.0

    def _poll(self, name: str) -> None:
        check, outages = self.checks[name], self.outages[name]
        while not self._stop.is_set():
            at = time.monotonic()
            try:
                check()
                outages.record(True, at)
            except Exception as exc:  # noqa: BLE001 - any failure of the check is the service being down
                outages.record(False, at, f"{type(exc).__name__}: {exc}"[:200])
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - at)))

    def start(self) -> DowntimePoller:
        self.started = time.monotonic()
        for name in self.checks:
            thread = threading.Thread(target=self._poll, args=(name,), name=f"downtime-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> dict[str, Outages]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        self.stopped = time.monotonic()
        for outages in self.outages.values():
            outages.close(self.stopped)
        return self.outages

    def report(self, title: str) -> str:
        """A table: per service, seconds down, outages, the longest, polls (and whether it ended down)."""
        lines = [f"== {title}: {self.stopped - self.started:.1f} s observed, each service polled every "
                 f"{self.interval_s:g} s",
                 f"{'service':<28}{'down s':>9}{'outages':>9}{'longest s':>11}{'polls':>8}  note"]
        for name in sorted(self.outages):
            o = self.outages[name]
            note = f"STILL DOWN: {o.last_error}" if o.still_down else ""
            lines.append(f"{name:<28}{o.down_s:>9.1f}{len(o.spans):>9}{o.longest_s:>11.1f}{o.polls:>8}  {note}")
        return "\n".join(lines)
