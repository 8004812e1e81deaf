"""What ``make up``, ``make down``, ``make smoke`` and ``make verify`` run, through the Automation API."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from infra.control import docker_stack, isolated, relocate, services, workspace
from infra.control.workspace import (
    StackCommandFailed,
    down,
    forget,
    outputs,
    pulumi_env,
)
from infra.paths import PROJECT_ROOT

console = Console()


def up(stack: str, quiet: bool = False) -> float:
    """``pulumi up`` on the stack, its data first moved to where this release keeps it (``relocate``); seconds."""
    relocate.relocate(stack, outputs(stack), console.print)
    return workspace.up(stack, quiet)


def restart(service: str, stack: str) -> float:
    """The restart the target provides (``infra.control.services``); seconds until healthy.

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


def verify(pytest_args: list[str], stack: str = "native") -> int:
    """The probe suite, JUnit XML in reports/probes.xml for CD; its exit code.

    A docker stack (the lab) is probed as deployed (``make up STACK=lab`` first). Otherwise an isolated copy of
    the native stack (``verify``: its own ports and state) is deployed, probed and destroyed whatever happens.
    """
    (PROJECT_ROOT / "reports").mkdir(exist_ok=True)
    if docker_stack.is_docker(stack):
        services.point_at_engine()
        if not outputs(stack):
            raise StackCommandFailed(f"stack {stack} has no outputs: deploy it first (make up STACK={stack})")
        return _probes(stack, pytest_args)
    copy = "verify"
    isolated.isolated_stack(copy)
    try:
        console.print(f"==> stack {copy} up in {up(copy, quiet=True):.1f} s")
        return _probes(copy, pytest_args)
    finally:
        down(copy, quiet=True)
        forget(copy)
        isolated.remove_stack_file(copy)


def _probes(stack: str, pytest_args: list[str]) -> int:
    argv = [sys.executable, "-m", "pytest", "platform_tests", "--stack", stack, "-p", "no:cacheprovider",
            f"--junitxml={PROJECT_ROOT / 'reports' / 'probes.xml'}", *pytest_args]
    return subprocess.run(argv, cwd=PROJECT_ROOT, env={**os.environ, **pulumi_env(stack)}, check=False).returncode


def smoke(stack: str) -> list[tuple[str, str, bool, str]]:
    """The smoke check of a deployed stack (``smoke_checks`` on its outputs)."""
    return smoke_checks(outputs(stack))


def smoke_checks(out: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    """A short check that the core answers: store, catalog, engine, signals. (layer, check, ok, detail).

    Acts as the host profiles' identity (the writer), like the engines do; a client without a token is
    refused by the catalog gate (checked too: governance fails closed).
    """
    import requests

    from infra.control import clients

    profiles = out["profiles"]["host"]
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
    if "trino" in profiles:
        try:
            cur = clients.trino_connection(out, request_timeout=30).cursor()
            cur.execute("SHOW CATALOGS")
            catalogs = sorted(r[0] for r in cur.fetchall())
            wanted = profiles["trino"]["catalogs"]
            ok = all(c in catalogs for c in wanted)
            results.append(("compute", "Trino (HTTPS, password) sees the Iceberg catalogs", ok,
                            f"catalogs: {catalogs}"))
        except Exception as exc:  # noqa: BLE001
            results.append(("compute", "Trino (HTTPS, password) sees the Iceberg catalogs", False, str(exc)))
    if "flink" in profiles and "rest" in profiles["flink"]:
        results.append(flink_smoke(profiles["flink"], out.get("jobs") or {}))
    results += smoke_streams(out)
    prometheus = (out.get("observability") or {}).get("prometheus")
    if prometheus:
        try:
            session = requests.Session()
            session.trust_env = False
            targets = session.get(f"{prometheus}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
            health = {t["labels"]["job"]: t["health"] for t in targets}
            results.append(("observability", "Prometheus scrapes its targets", bool(health),
                            ", ".join(f"{job} {state}" for job, state in sorted(health.items()))))
        except Exception as exc:  # noqa: BLE001
            results.append(("observability", "Prometheus scrapes its targets", False, str(exc)))
    return results


def smoke_streams(out: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    """Kafka lists the platform's topics; Connect runs every declared connector (and all its tasks)."""
    import requests

    results: list[tuple[str, str, bool, str]] = []
    profiles, streams = out["profiles"]["host"], out.get("streams") or {}
    if "kafka" in profiles:
        check = "Kafka lists the platform's topics"
        try:
            from confluent_kafka.admin import AdminClient

            admin = AdminClient({"bootstrap.servers": profiles["kafka"]["bootstrap.servers"]})
            found = set(admin.list_topics(timeout=10).topics)
            wanted = [t["name"] for t in streams.get("topics", [])]
            missing = [t for t in wanted if t not in found]
            results.append(("compute", check, not missing,
                            f"missing: {missing}" if missing else f"{len(wanted)} topics: {', '.join(wanted)}"))
        except Exception as exc:  # noqa: BLE001
            results.append(("compute", check, False, str(exc)))
    if "kafka_connect" in profiles:
        check = "Connect runs every connector (RUNNING, all tasks)"
        try:
            base = profiles["kafka_connect"]["url"]
            status = requests.get(f"{base}/connectors?expand=status", timeout=10).json()
            states = {name: [body["status"]["connector"]["state"], *(t["state"] for t in body["status"]["tasks"])]
                      for name, body in status.items()}
            wanted = [c["name"] for c in streams.get("connectors", [])]
            bad = {n: states.get(n, ["ABSENT"]) for n in wanted if set(states.get(n, ["ABSENT"])) != {"RUNNING"}}
            results.append(("compute", check, not bad,
                            f"not running: {bad}" if bad else ", ".join(f"{n} RUNNING" for n in wanted)))
        except Exception as exc:  # noqa: BLE001
            results.append(("compute", check, False, str(exc)))
    return results


def flink_smoke(profile: dict[str, Any], jobs: dict[str, Any]) -> tuple[str, str, bool, str]:
    """The streaming job is RUNNING (every task) on the job manager, with the job id the stack recorded."""
    from infra.services.flink.rest import FlinkJobError, FlinkRest

    check = "Flink runs the streaming job"
    name = profile["job"]["name"]
    try:
        rest = FlinkRest(profile["rest"], timeout_s=10)
        found = rest.find(name)
        if found is None:
            return ("compute", check, False, f"no running job named {name} at {profile['rest']}")
        job = rest.job(str(found["jid"])) or {}
        tasks = sorted({v.get("status", "?") for v in job.get("vertices", [])})
        recorded = next((j.get("job_id") for j in jobs.values() if j.get("job_name") == name), None)
        completed = rest.checkpoints(str(found["jid"])).get("counts", {}).get("completed", 0)
        ok = job.get("state") == "RUNNING" and tasks == ["RUNNING"] and recorded == found["jid"]
        detail = f"{name} {job.get('state')}, tasks {tasks}, {completed} checkpoints completed"
        if recorded != found["jid"]:
            detail += f"; the stack recorded job {recorded}, Flink runs {found['jid']}"
        return ("compute", check, ok, detail)
    except FlinkJobError as exc:
        return ("compute", check, False, str(exc))


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
