"""Binaries built from the Go module proxy, with the project's one pair of Go module and build caches."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from lakehouse_platform.artifacts import cache
from lakehouse_platform.artifacts.artifact import ArtifactError
from lakehouse_platform.paths import cache_base


def go_env() -> dict[str, str]:
    """Environment for ``go``: no toolchain download, static, and the module and build caches the project's
    scripts use too (``scripts/go-env.sh``: ``<cache base>/go``): one pair to prune (``make prune``), not two,
    each gigabytes on a cold machine (CI's disk)."""
    root = cache_base() / "go"
    return {
        **os.environ,
        "GOMODCACHE": str(root / "mod"),
        "GOCACHE": str(root / "build"),
        "GOFLAGS": "-buildvcs=false -modcacherw",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }


def build_from_module(module: str, version: str, package: str, out: Path, ldflags: str = "-s -w") -> float:
    """Download ``module@version`` and build ``package`` from its own directory into ``out``; seconds taken.

    Built inside the module (not ``go install module/pkg@version``), so the module's own go.mod and
    go.sum apply, replace directives included.
    """
    if not shutil.which("go"):
        raise ArtifactError(f"the go toolchain is needed to build {module}; install Go 1.26+")
    env = go_env()
    cache.console.print(f"[bold]{out.name}[/]: go mod download {module}@{version}")
    downloaded = cache.run(["go", "mod", "download", "-json", f"{module}@{version}"], env=env, cwd=cache.cache_root())
    source = Path(json.loads(downloaded)["Dir"])
    out.parent.mkdir(parents=True, exist_ok=True)
    cache.console.print(f"[bold]{out.name}[/]: go build {package} (cold: minutes on 2 cores)")
    started = time.monotonic()
    cache.run(["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(out) + ".part", package], env=env,
              cwd=source)
    os.replace(str(out) + ".part", out)
    return round(time.monotonic() - started, 1)
