"""The Go builds of the artifact cache and the project's scripts share one pair of Go caches."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lakehouse_platform.artifacts import gobuild
from tests.support import REPO_ROOT


def test_artifact_builds_use_the_go_caches_of_the_scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two pairs would hold the same modules twice: gigabytes on a cold machine, where CI ran out of disk.
    monkeypatch.setenv("LAKEHOUSE_CACHE", str(tmp_path))
    scripts = subprocess.run(
        ["bash", "-c", f'. "{REPO_ROOT}/scripts/go-env.sh"; echo "$GOMODCACHE"; echo "$GOCACHE"'],
        capture_output=True, text=True, check=True).stdout.split()
    env = gobuild.go_env()
    assert [env["GOMODCACHE"], env["GOCACHE"]] == scripts
    assert Path(env["GOMODCACHE"]).is_relative_to(tmp_path)
