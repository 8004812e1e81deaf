"""Server binaries from Debian packages, installed without starting anything."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from infra.artifacts import cache
from infra.artifacts.artifact import ArtifactError


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
