"""Operate a native stack from the command line: up, down, outputs, restart one service, smoke check.

``make up`` runs ``python -m infra.targets.native.stack up --stack native``; ``make down`` runs
``down``. The Pulumi CLI is the project's own (.tools/bin, built by scripts/install-pulumi.sh),
with the environment of scripts/pulumi-env.sh (local file backend, no update checks, no plugin
downloads) and the native stack's documented lab passphrase.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from infra.pulumi_cli import ensure_stack, outputs, pulumi, pulumi_env
from infra.spec.loader import PROJECT_ROOT, state_root

console = Console()


def write_offset_stack(name: str, offset: int, base: str = "native") -> Path:
    """Write ``Pulumi.<name>.yaml``: the ``base`` stack with every port moved by ``offset``.

    Tests and benchmarks deploy such a stack so they never collide with a developer's own
    ``make up`` platform on the default ports. Remove it with ``remove_stack``.
    """
    import yaml

    from infra.spec import load_stack
    from infra.spec.loader import CONFIG_KEY, read_stack_config

    spec = load_stack(base)
    platform = read_stack_config(PROJECT_ROOT / f"Pulumi.{base}.yaml")[CONFIG_KEY]
    services = platform.setdefault("services", {})
    for svc_name, svc in spec.enabled_services().items():
        ports = {}
        for port_name, port in svc.ports.items():
            key = "external" if port.external is not None else "internal"
            ports[port_name] = {key: (port.external or port.internal) + offset}
        if ports:
            services.setdefault(svc_name, {})["ports"] = ports
    path = PROJECT_ROOT / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {CONFIG_KEY: platform}}, sort_keys=False))
    return path


def remove_stack(name: str) -> None:
    """Forget a stack (after destroy) and delete its stack file; its state directory is kept."""
    subprocess.run(["pulumi", "stack", "rm", name, "--yes", "--force", "--non-interactive"], cwd=PROJECT_ROOT,
                   env=pulumi_env(name), check=False, capture_output=True)
    (PROJECT_ROOT / f"Pulumi.{name}.yaml").unlink(missing_ok=True)


def up(stack: str, quiet: bool = False) -> float:
    """``pulumi up --yes`` on the stack; returns the wall time in seconds.

    ``quiet`` keeps Pulumi's output for an error message only (benchmarks, tests).
    """
    ensure_stack(stack)
    start = time.perf_counter()
    done = pulumi("up", "--yes", "--skip-preview", stack=stack, capture=quiet, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pulumi up --stack {stack} failed:\n{(done.stdout or '')[-4000:]}{done.stderr or ''}")
    return time.perf_counter() - start


def down(stack: str, quiet: bool = False) -> None:
    """``pulumi destroy --yes``: every process stopped; data directories are kept."""
    ensure_stack(stack)
    done = pulumi("destroy", "--yes", "--skip-preview", stack=stack, capture=quiet, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pulumi destroy --stack {stack} failed:\n{(done.stdout or '')[-4000:]}{done.stderr or ''}")


def restart(service: str, stack: str) -> float:
    """Stop one service's process by its recorded pid, then let ``pulumi up`` start it again.

    This is the restart the target provides to probes: Pulumi notices the dead process and
    restarts only that service, waiting for its health check. Returns seconds until healthy.
    """
    from infra.targets.native import local_service

    data_dir = Path(outputs(stack)["native"]["services"][service]["data_dir"])
    record = local_service.ProcessRecord.from_pid_file(data_dir / local_service.PID_FILE_NAME)
    if record is None:
        raise SystemExit(f"{service}: no pid file in {data_dir}; is the stack up?")
    local_service.stop_process_tree(record, grace_s=30.0)
    start = time.perf_counter()
    pulumi("up", "--yes", "--skip-preview", stack=stack)
    return time.perf_counter() - start


VERIFY_STACK, VERIFY_OFFSET = "verify", 21000


def verify(pytest_args: list[str]) -> int:
    """Deploy a throwaway copy of the native stack (ports +21000), run the probes, destroy it.

    The exit code is the probe suite's; the stack is destroyed whatever happens. JUnit XML goes to
    reports/probes.xml for CD.
    """
    import shutil

    write_offset_stack(VERIFY_STACK, VERIFY_OFFSET)
    shutil.rmtree(state_root() / VERIFY_STACK, ignore_errors=True)
    (PROJECT_ROOT / "reports").mkdir(exist_ok=True)
    try:
        console.print(f"==> stack {VERIFY_STACK} up in {up(VERIFY_STACK, quiet=True):.1f} s")
        argv = [sys.executable, "-m", "pytest", "platform_tests", "--stack", VERIFY_STACK, "-p", "no:cacheprovider",
                f"--junitxml={PROJECT_ROOT / 'reports' / 'probes.xml'}", *pytest_args]
        return subprocess.run(argv, cwd=PROJECT_ROOT, env={**os.environ, **pulumi_env()}).returncode
    finally:
        down(VERIFY_STACK, quiet=True)
        remove_stack(VERIFY_STACK)


def smoke(stack: str) -> list[tuple[str, str, bool, str]]:
    """A short check that the core answers: store, catalog, engine. (layer, check, ok, detail)."""
    import boto3
    import requests
    import trino
    from botocore.config import Config

    out = outputs(stack)
    creds, profiles = out["credentials"], out["profiles"]["host"]
    results = []
    py = profiles["pyiceberg"]
    try:
        s3 = boto3.client("s3", endpoint_url=py["s3.endpoint"], region_name=py["s3.region"],
                          aws_access_key_id=creds["s3_access_key"], aws_secret_access_key=creds["s3_secret_key"],
                          config=Config(s3={"addressing_style": "path"}))
        buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        results.append(("storage", "S3 lists the warehouse bucket", "warehouse" in buckets, f"buckets: {buckets}"))
    except Exception as exc:  # noqa: BLE001 - a smoke check reports, it does not raise
        results.append(("storage", "S3 lists the warehouse bucket", False, str(exc)))
    try:
        resp = requests.get(f"{py['uri']}/v1/config", timeout=10)
        results.append(("catalog", "REST catalog answers /v1/config", resp.status_code == 200, f"HTTP {resp.status_code}"))
    except Exception as exc:  # noqa: BLE001
        results.append(("catalog", "REST catalog answers /v1/config", False, str(exc)))
    if "trino" in profiles:
        t = profiles["trino"]
        try:
            cur = trino.dbapi.connect(host=t["host"], port=t["port"], user=t["user"]).cursor()
            cur.execute("SHOW CATALOGS")
            catalogs = sorted(r[0] for r in cur.fetchall())
            ok = all(c in catalogs for c in t["catalogs"])
            results.append(("compute", "Trino sees the Iceberg catalogs", ok, f"catalogs: {catalogs}"))
        except Exception as exc:  # noqa: BLE001
            results.append(("compute", "Trino sees the Iceberg catalogs", False, str(exc)))
    return results


def print_endpoints(stack: str) -> None:
    out = outputs(stack)
    table = Table(title=f"Endpoints: stack {stack}")
    for column in ("service", "port", "address (host side)", "pid"):
        table.add_column(column)
    pids = {name: info.get("pid") for name, info in out.get("native", {}).get("services", {}).items()}
    for service, ports in out["endpoints"].items():
        for port, addr in ports.items():
            table.add_row(service, port, addr.get("external", addr["internal"]), str(pids.get(service, "")))
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.targets.native.stack", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "outputs", "restart", "smoke", "verify"))
    parser.add_argument("service", nargs="?", help="the service to restart")
    parser.add_argument("--stack", default="native")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "verify":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "up":
            seconds = up(args.stack)
            console.print(f"==> stack {args.stack} up in {seconds:.1f} s")
            print_endpoints(args.stack)
            from infra import review

            review.main(["--stack", args.stack])
            return _smoke_report(args.stack)
        if args.command == "down":
            down(args.stack)
            return 0
        if args.command == "verify":
            return verify(extra)
        if args.command == "outputs":
            print(json.dumps(outputs(args.stack), indent=2))
            return 0
        if args.command == "restart":
            if not args.service:
                parser.error("restart needs a service name")
            console.print(f"==> {args.service} restarted and healthy in {restart(args.service, args.stack):.1f} s")
            return 0
        return _smoke_report(args.stack)
    except subprocess.CalledProcessError as exc:
        console.print(f"[red]error:[/red] {' '.join(exc.cmd[:3])} ... exited {exc.returncode}; see the output above")
        return exc.returncode or 1
    except RuntimeError as exc:
        console.print(f"[red]error:[/red] {str(exc).splitlines()[0]}; see the output above")
        return 1


def _smoke_report(stack: str) -> int:
    results = smoke(stack)
    table = Table(title="Smoke check")
    for column in ("layer", "check", "result", "detail"):
        table.add_column(column, overflow="fold")
    for layer, check, ok, detail in results:
        table.add_row(layer, check, "[green]ok[/green]" if ok else "[red]FAILED[/red]", detail)
    console.print(table)
    return 0 if all(ok for *_, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
