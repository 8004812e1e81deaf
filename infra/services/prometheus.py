"""Prometheus: scrapes the exporter and the catalog gate, evaluates the alert rules the spec declares (observability).

Whole definition: defaults, the scrape config and the rules file (``infra.operations.alerts``, the same
text on every target), the local process (Debian's ``prometheus`` package, run as the platform's own
process bound to 127.0.0.1, its TSDB under the service's home; the package's own service is never
started), the container (the pinned ``prom/prometheus`` image). On aws the rules go to Amazon Managed
Service for Prometheus instead (``managed``; see ``infra/targets/aws/observability.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from infra.artifacts import apt, cache
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.operations.alerts import rules_yaml
from infra.services.context import ServiceContext, Side, address
from infra.services.definition import ServiceDefinition
from infra.services.plans import ContainerHost, ContainerPlan, NativeHost, NativePlan
from infra.spec import PlatformSpec, Target, parse_size

NAME = "prometheus"
PACKAGE = "prometheus"
IMAGE_ETC = "/etc/prometheus"

DEFAULT = {
    "layer": "observability",
    "role": "scrapes the exporter and the catalog gate, evaluates the alert rules declared from the spec",
    "version": "2.55.1",
    "native_version": "2.42.0",  # Debian bookworm's prometheus package
    "image": "prom/prometheus:v2.55.1",
    "ports": {"http": {"internal": 9090, "external": 9090}},
    "health": {"kind": "http", "port": "http", "path": "/-/ready",
               "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:9090/-/ready"]},
    "memory": "256MiB",
}

#: What Prometheus scrapes: service -> (job name, metrics path), each when enabled.
TARGETS = {"lakehouse-exporter": ("lakehouse-exporter", "/metrics"), "catalog-gate": ("catalog-gate", "/metrics")}


def scrape_config(spec: PlatformSpec, side: Side, rules_file: str) -> str:
    """prometheus.yml: the stack's scrape and evaluation interval, its rules, its targets (and itself)."""
    interval = f"{spec.observability.scrape_interval_s}s"
    jobs = [{"job_name": job, "metrics_path": path,
             "static_configs": [{"targets": [address(spec, name, "http", side)]}]}
            for name, (job, path) in TARGETS.items() if name in spec.enabled_services()]
    jobs.append({"job_name": "prometheus", "static_configs": [{"targets": [address(spec, NAME, "http", side)]}]})
    timeout = f"{max(1, min(spec.observability.scrape_interval_s, 10))}s"
    document = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": timeout,
                   "external_labels": {"platform": spec.name}},
        "rule_files": [rules_file],
        "scrape_configs": jobs,
    }
    return "# Generated from the stack's spec (infra/services/prometheus.py); do not edit.\n" + yaml.safe_dump(
        document, sort_keys=False)


def flags(ctx: ServiceContext, config: str, tsdb: str, listen: str) -> list[str]:
    obs = ctx.spec.observability
    # The size limit in whole megabytes (Prometheus' units are powers of 1024: MB there is MiB).
    size_mb = max(parse_size(obs.retention_size) // (1024 * 1024), 64)
    return [f"--config.file={config}", f"--web.listen-address={listen}", f"--storage.tsdb.path={tsdb}",
            f"--storage.tsdb.retention.time={obs.retention_days}d", f"--storage.tsdb.retention.size={size_mb}MB"]


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    assert host.artifact is not None and ctx.service.health is not None
    config, rules, tsdb = host.home / "prometheus.yml", host.home / "rules.yml", host.home / "tsdb"
    return NativePlan(
        argv=[str(host.artifact.path), *flags(ctx, str(config), str(tsdb), ctx.address(NAME, "http"))],
        files={str(config): scrape_config(ctx.spec, Side.INTERNAL, str(rules)), str(rules): rules_yaml(ctx.spec)},
        setup=[["mkdir", "-p", str(tsdb)]],
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=15.0,
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    config, rules = f"{IMAGE_ETC}/prometheus.yml", f"{IMAGE_ETC}/rules.yml"
    return ContainerPlan(
        command=flags(ctx, config, "/prometheus", f"0.0.0.0:{ctx.listen_port('http')}"),
        uploads={config: scrape_config(ctx.spec, Side.INTERNAL, rules), rules: rules_yaml(ctx.spec)},
        volumes={"data": "/prometheus"},
    )


# -- native artifact: Debian's prometheus package -----------------------------------------------


def artifact_key(ctx: ServiceContext) -> str:
    return f"prometheus:{ctx.service.native_version or ctx.service.version}:apt"


def _version(binary: Path) -> str:
    printed = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"version (\d+\.\d+\.\d+)", printed.stdout + printed.stderr)
    return match.group(1) if match else "unknown"


def fetch_prometheus(ctx: ServiceContext) -> Artifact:
    """``/usr/bin/prometheus`` from Debian's package, installed without recommends (no node exporter daemon)
    and without starting the package's own service; where systemd runs, that service is disabled."""
    wanted = ctx.service.native_version or ctx.service.version
    key = artifact_key(ctx)
    with cache.locked(NAME):
        if apt.installed_version(PACKAGE) is None:
            if not apt.refresh_if_unknown([PACKAGE]):
                raise ArtifactError(f"apt offers no {PACKAGE} package")
            apt.install([PACKAGE])
        notes = [f"apt {PACKAGE} {apt.installed_version(PACKAGE)} (--no-install-recommends: no node exporter)"]
        if Path("/run/systemd/system").is_dir() and shutil.which("systemctl") and os.geteuid() == 0:
            # The package enables its own service on :9090 (every interface); the platform runs its own.
            cache.run(["systemctl", "disable", "--now", PACKAGE])
            notes.append("the package's own prometheus.service disabled (systemctl disable --now)")
        binary = Path("/usr/bin/prometheus")
        if not binary.exists():
            raise ArtifactError(f"{binary} missing after installing {PACKAGE}")
        version = _version(binary)
        if not version.startswith(wanted.rsplit(".", 1)[0]):
            notes.append(f"apt installed {version}, the spec expects {wanted}")
        if version != ctx.service.version:
            notes.append(f"pin {ctx.service.version} (the image); Debian bookworm offers {version}")
        entry: cache.Entry = {
            "name": NAME, "requested": wanted, "version": version, "path": str(binary), "root": str(binary.parent),
            "files": {},  # apt owns these files: recorded, not re-verified (an apt upgrade may change them)
            "size": binary.stat().st_size, "sha256": cache.sha256_file(binary), "source": f"apt {PACKAGE}",
            "notes": notes,
        }
        if cache.load_manifest().get(key) != entry:
            cache.record(key, entry)
        return cache.artifact_from(entry)


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="scrapes the exporter, evaluates the spec's alert rules",
        container=container, native=native,
        managed={Target.AWS: "Amazon Managed Service for Prometheus (workspace, rule groups, alert manager to SNS)"},
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_prometheus, source="Debian apt (prometheus)"),
    ),
)
