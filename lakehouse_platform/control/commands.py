"""What ``lakehouse up``, ``down``, ``smoke``, ``verify`` and the service controls run, through the Automation API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from lakehouse_platform.control import docker_stack, relocate, services, workspace
from lakehouse_platform.control.workspace import StackCommandFailed, down, outputs, pulumi_env
from lakehouse_platform.paths import PACKAGE_DIR, project_root, reports_dir
from lakehouse_platform.services.registry import registry

#: ``down`` is the workspace's ``pulumi destroy``, here with the other stack commands.
__all__ = ["StackCommandFailed", "console", "down", "print_endpoints", "print_smoke", "restart", "smoke",
           "smoke_checks", "smoke_report", "start", "stop", "up", "verify"]

console = Console()


def up(stack: str, quiet: bool = False) -> float:
    """``pulumi up`` on the stack, its data first moved to where this release keeps it (``relocate``); seconds."""
    relocate.relocate(stack, outputs(stack), console.print)
    return workspace.up(stack, quiet)


def restart(service: str, stack: str) -> float:
    """The restart the target provides (``lakehouse_platform.control.services``); seconds until healthy.

    Natively: the service's process stopped by its recorded pid, then ``pulumi up`` notices it is not running and
    starts only it, waiting for its health check. In the lab: ``docker restart`` of its container, to healthy.
    """
    return services.for_outputs(outputs(stack), stack).restart(service)


def stop(service: str, stack: str) -> float:
    """Stop one service (natively its process and watchdog by the recorded pid; in the lab ``docker stop``);
    nothing starts it again until ``start``. Seconds taken."""
    return services.for_outputs(outputs(stack), stack).stop(service)


def start(service: str, stack: str) -> float:
    """Start one stopped service again (natively ``pulumi up``; in the lab ``docker start``), to healthy."""
    return services.for_outputs(outputs(stack), stack).start(service)


def verify(stack: str, pytest_args: list[str], junit: Path | None = None) -> int:
    """The probe suite (shipped in the package) against the project's deployed ``stack``: its exit code; JUnit XML
    for CD in ``junit`` (default ``<project>/reports/probes.xml``). The stack's ``disposable`` output decides
    whether the disruptive probes run (``--disruptive=<stack>`` among ``pytest_args`` overrides it)."""
    if docker_stack.is_docker(stack):
        services.point_at_engine()
    if not outputs(stack):
        raise StackCommandFailed(f"stack {stack} has no outputs: deploy it first (lakehouse up --stack {stack})")
    junit = junit or reports_dir() / "probes.xml"
    junit.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pytest", str(PACKAGE_DIR / "probes"), "--stack", stack, "-p", "no:cacheprovider",
            f"--junitxml={junit}", *pytest_args]
    return subprocess.run(argv, cwd=project_root(), env={**os.environ, **pulumi_env(stack)}, check=False).returncode


def smoke(stack: str) -> list[tuple[str, str, bool, str]]:
    """The smoke check of a deployed stack (``smoke_checks`` on its outputs)."""
    return smoke_checks(outputs(stack))


def smoke_checks(out: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    """A short check that the core answers: store, catalog, engine, signals. (layer, check, ok, detail).

    Acts as the host profiles' identity (the writer), like the engines do; a client without a token is
    refused by the catalog gate (checked too: governance fails closed).
    """
    import requests

    from lakehouse_platform.control import clients

    results = []
    py = clients.profile(out, "pyiceberg")
    try:
        s3 = clients.s3_client(out)
        bucket = py["warehouse"].removeprefix("s3://").strip("/")
        s3.head_bucket(Bucket=bucket)
        results.append(("storage", "S3 reaches the warehouse bucket", True,
                        f"bucket {bucket} as {clients.identity_of(out, None)}"))
    except Exception as exc:  # noqa: BLE001 - a smoke check reports, it does not raise
        results.append(("storage", "S3 reaches the warehouse bucket", False, str(exc)))
    headers = {"Authorization": f"Bearer {py['token']}"} if py.get("token") else {}
    try:
        resp = requests.get(f"{py['uri']}/v1/config", timeout=10, headers=headers)
        results.append(("catalog", "REST catalog answers /v1/config", resp.status_code == 200,
                        f"HTTP {resp.status_code}"))
    except Exception as exc:  # noqa: BLE001
        results.append(("catalog", "REST catalog answers /v1/config", False, str(exc)))
    if headers:
        try:
            resp = requests.get(f"{py['uri']}/v1/config", timeout=10)
            results.append(("governance", "the catalog refuses a client without a token", resp.status_code == 401,
                            f"HTTP {resp.status_code}"))
        except Exception as exc:  # noqa: BLE001
            results.append(("governance", "the catalog refuses a client without a token", False, str(exc)))
    # What each service's package asks of it (ServiceDefinition.probes.smoke): Trino, Prometheus, Flink, Kafka,
    # Connect; each says nothing where its service is not in this stack.
    for definition in registry():
        if definition.probes.smoke is not None:
            results += definition.probes.smoke(out)
    return results


def print_endpoints(stack: str) -> None:
    out = outputs(stack)
    table = Table(title=f"Endpoints: stack {stack}")
    docker = out.get("docker") or {}
    for column in ("service", "port", "address (host side)", "container" if docker else "pid"):
        table.add_column(column)
    runs = {name: info.get("pid") for name, info in out.get("native", {}).get("services", {}).items()}
    runs.update({name: info.get("name") for name, info in (docker.get("containers") or {}).items()})
    for service, ports in out["endpoints"].items():
        for port, addr in ports.items():
            shown = addr.get("external") or (addr["internal"] if not docker else "(not published)")
            table.add_row(service, port, shown, str(runs.get(service, "")))
    console.print(table)


def smoke_report(stack: str) -> int:
    return print_smoke(smoke(stack))


def print_smoke(results: list[tuple[str, str, bool, str]]) -> int:
    """The smoke check's table; 0 when every check passed."""
    table = Table(title="Smoke check")
    for column in ("layer", "check", "result", "detail"):
        table.add_column(column, overflow="fold")
    for layer, check, ok, detail in results:
        table.add_row(layer, check, "[green]ok[/green]" if ok else "[red]FAILED[/red]", detail)
    console.print(table)
    return 0 if all(ok for *_, ok, _ in results) else 1
