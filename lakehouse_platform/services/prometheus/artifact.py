"""Prometheus's native artifact: Debian's prometheus package (apt)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from lakehouse_platform.artifacts import apt, cache
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.prometheus.config import NAME

PACKAGE = "prometheus"


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
