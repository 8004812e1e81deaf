"""Health: one probe (http, tcp or command), and waiting until a started service passes it."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import requests
import tenacity

from lakehouse_platform.providers import plain
from lakehouse_platform.runtime import watchdog
from lakehouse_platform.targets.native.local_service.errors import HealthPending, LocalServiceError, ServiceExited
from lakehouse_platform.targets.native.local_service.host import child_env, failure, user_ids
from lakehouse_platform.targets.native.local_service.inputs import LOOPBACK, ServiceInputs
from lakehouse_platform.targets.native.local_service.processes import ProcessRecord, process_matches, reap

# Each single health probe is bounded, so one hung request cannot eat the whole health timeout.
MAX_PROBE_TIMEOUT_S = 2.0


def _json_path(document: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(document, Mapping) or part not in document:
            raise HealthPending(f"JSON field {dotted!r} missing")
        document = document[part]
    return document


def probe_health(
    health: Mapping[str, Any],
    timeout_s: float,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> None:
    """Run one health probe; return if healthy, raise ``HealthPending`` with the reason if not.

    Kinds:
      * ``{"kind": "http", "url": ..., "expect_status": 200, "json_field": "a.b", "json_expect": v}``:
        GET must answer ``expect_status``; with ``json_field`` the JSON body's field must equal
        ``json_expect`` if given, else be truthy (Trino: ``json_field="starting", json_expect=False``).
      * ``{"kind": "tcp", "host": "127.0.0.1", "port": N}``: a TCP connect succeeds.
      * ``{"kind": "command", "argv": [...]}``: the command exits 0 (e.g. ``pg_isready``).
    """
    health = plain(health, drop_none=True)
    kind = health.get("kind")
    if kind == "http":
        with requests.Session() as session:
            # Never through a proxy from the environment: the target is on loopback.
            session.trust_env = False
            try:
                resp = session.get(health["url"], timeout=timeout_s)
            except requests.RequestException as exc:
                raise HealthPending(f"GET {health['url']}: {type(exc).__name__}") from None
        expect = int(health.get("expect_status", 200))
        if resp.status_code != expect:
            raise HealthPending(f"GET {health['url']} answered {resp.status_code}, expected {expect}")
        if "json_field" in health:
            try:
                document = resp.json()
            except ValueError:
                raise HealthPending(f"GET {health['url']}: body is not JSON") from None
            value = _json_path(document, health["json_field"])
            expected = health.get("json_expect")
            if "json_expect" in health and value != expected:
                raise HealthPending(f"JSON field {health['json_field']!r} is {value!r}, expected {expected!r}")
            if "json_expect" not in health and not value:
                raise HealthPending(f"JSON field {health['json_field']!r} is {value!r}, expected a truthy value")
    elif kind == "tcp":
        host, port = health.get("host", LOOPBACK), int(health["port"])
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            raise HealthPending(f"TCP connect {host}:{port}: {exc.strerror or exc}") from None
    elif kind == "command":
        argv = [str(a) for a in health["argv"]]
        try:
            done = subprocess.run(argv, env=dict(env) if env is not None else None, cwd=cwd,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise HealthPending(f"health command {argv[0]} timed out") from None
        except OSError as exc:
            raise HealthPending(f"health command {argv[0]} could not start: {exc.strerror}") from None
        if done.returncode != 0:
            raise HealthPending(f"health command {argv[0]} exited {done.returncode}")
    else:
        raise LocalServiceError(f"unknown health check kind {kind!r}")


def wait_healthy(spec: ServiceInputs, record: ProcessRecord) -> None:
    """Wait until the health check passes, the process dies, or ``health_timeout_s`` runs out.

    Raises ``ServiceExited`` at once if the process dies (no point waiting out the timeout) and
    ``LocalServiceError`` on timeout; both carry the log tail. The process is left as it is.
    """
    deadline = time.monotonic() + spec.health_timeout_s
    env = child_env(spec, user_ids(spec.run_as_user))

    def attempt() -> None:
        if not process_matches(record):
            code = reap(record.pid)
            how = f"exited with code {code}" if code is not None else "exited"
            raise ServiceExited(str(failure(spec, f"process {record.pid} {how} before becoming healthy")))
        # The watchdog reports the service it started; until then it cannot be armed (SIGUSR1).
        supervised = watchdog.read_status(spec.data_dir)
        if supervised.get("watchdog_pid") != record.pid or not supervised.get("pid"):
            raise HealthPending("the watchdog has not started the service yet")
        remaining = max(0.1, deadline - time.monotonic())
        probe_health(spec.health_check, min(MAX_PROBE_TIMEOUT_S, remaining), env=env, cwd=spec.cwd)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(spec.health_timeout_s),
        # Fast first polls (most services are up in well under a second), then back off.
        wait=tenacity.wait_exponential(multiplier=0.05, max=0.5),
        retry=tenacity.retry_if_exception_type(HealthPending),
        reraise=True,
    )
    try:
        retrying(attempt)
    except HealthPending as last:
        raise failure(spec, f"not healthy within {spec.health_timeout_s:g}s (last check: {last})") from None
    # A service that passed its check and then died at once is not up (e.g. the port answered
    # from a process that exits on a config error right after binding).
    if not process_matches(record):
        raise failure(spec, f"process {record.pid} exited right after its health check passed")
