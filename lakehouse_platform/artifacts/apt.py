"""Server binaries from Debian packages, installed without starting anything."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from lakehouse_platform.artifacts import cache
from lakehouse_platform.artifacts.artifact import ArtifactError


def candidates(packages: Sequence[str]) -> dict[str, str]:
    """``{package: candidate version}`` that apt offers (``(none)`` left out)."""
    result = subprocess.run(["apt-cache", "policy", *packages], capture_output=True, text=True, check=False)
    offered: dict[str, str] = {}
    for match in re.finditer(r"^(\S+):\n(?:\s+.*\n)*?\s+Candidate:\s*(\S+)", result.stdout, re.M):
        if match.group(2) != "(none)":
            offered[match.group(1)] = match.group(2)
    return offered


def refresh_if_unknown(packages: Sequence[str]) -> dict[str, str]:
    """``candidates``, after an ``apt-get update`` when apt knows none of them yet."""
    offered = candidates(packages)
    if not offered and os.geteuid() == 0:
        cache.run(["apt-get", "update"])
        offered = candidates(packages)
    return offered


def install(packages: Sequence[str]) -> None:
    """``apt-get install`` under a ``policy-rc.d`` that forbids starting services (root needed)."""
    if os.geteuid() != 0:
        raise ArtifactError(f"{' '.join(packages)} not installed; run as root or: sudo apt-get install "
                            + " ".join(packages))
    policy = Path("/usr/sbin/policy-rc.d")
    ours = not policy.exists()
    if ours:
        policy.write_text("#!/bin/sh\n# lakehouse-platform: no service starts during package installs\nexit 101\n")
        policy.chmod(0o755)
    cache.console.print(f"[bold]apt[/]: apt-get install {' '.join(packages)}")
    try:
        cache.run(["apt-get", "install", "-y", "--no-install-recommends", *packages],
                  env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    finally:
        if ours:
            policy.unlink(missing_ok=True)


def installed_version(package: str) -> str | None:
    """The installed version of ``package``, or None."""
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", package], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0 or not result.stdout.startswith("install ok installed"):
        return None
    return result.stdout.rsplit(" ", 1)[-1]


def upstream_of(debian_version: str) -> str:
    """``15.20-0+deb12u1`` (or ``1:15.20-1``) -> ``15.20``: the upstream version of a Debian package version."""
    return debian_version.split(":", 1)[-1].rsplit("-", 1)[0]


def offered_versions(package: str) -> list[str]:
    """Every version of ``package`` apt's sources offer (``apt-cache madison``), newest first."""
    result = subprocess.run(["apt-cache", "madison", package], capture_output=True, text=True, check=False)
    versions = []
    for line in result.stdout.splitlines():
        parts = [part.strip() for part in line.split("|")]
        if len(parts) >= 3 and parts[0] == package and parts[1] not in versions:
            versions.append(parts[1])
    return versions


def download(packages: Sequence[str], into: Path) -> list[Path]:
    """``apt-get download pkg=version ...`` into ``into`` (apt checks each file against its signed index); the
    .deb files. Nothing is installed."""
    into.mkdir(parents=True, exist_ok=True)
    cache.console.print(f"[bold]apt[/]: apt-get download {' '.join(packages)}")
    cache.run(["apt-get", "download", *packages], cwd=into)
    found = []
    for wanted in packages:
        name, _, version = wanted.partition("=")
        # Debian's file name: <package>_<version, its epoch's colon as %3a>_<architecture>.deb
        matches = [p for p in into.glob(f"{name}_*.deb") if p.name.split("_")[1].replace("%3a", ":") == version]
        if len(matches) != 1:
            raise ArtifactError(f"apt-get download {wanted}: expected one file in {into}, found {len(matches)}")
        found.append(matches[0])
    return found


def unpack(debs: Sequence[Path], into: Path) -> None:
    """``dpkg-deb -x`` each package into ``into`` (files only: no maintainer scripts run, nothing registered)."""
    for deb in debs:
        cache.run(["dpkg-deb", "-x", str(deb), str(into)])
