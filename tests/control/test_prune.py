"""``make prune`` (scripts/prune.sh): the Go caches go, every built binary and artifact stays."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.support import REPO_ROOT


def test_prune_removes_the_go_caches_and_keeps_what_was_built(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    module = cache / "go" / "mod" / "github.com" / "example" / "m@v1.0.0"
    module.mkdir(parents=True)
    (module / "go.mod").write_text("module example\n")
    for path in (module / "go.mod", module):  # read-only, as Go leaves its module cache
        path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    (cache / "go" / "build").mkdir()
    (cache / "go" / "build" / "entry-d").write_bytes(b"\0" * 2048)
    (cache / "artifacts" / "go" / "build").mkdir(parents=True)  # a release before 0.4.0's second pair
    kept = [cache / "pulumi" / "3.272.0" / "bin" / "pulumi", cache / "artifacts" / "seaweedfs" / "4.45" / "weed",
            cache / "artifacts" / "manifest.json"]
    for path in kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("built")

    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "prune.sh")], capture_output=True, text=True,
                          env={**os.environ, "LAKEHOUSE_CACHE": str(cache)}, check=False)

    assert done.returncode == 0, done.stderr
    assert not (cache / "go").exists() and not (cache / "artifacts" / "go").exists()
    assert all(path.read_text() == "built" for path in kept)
    assert f"removed {cache / 'go'}" in done.stdout and "built binaries and artifacts kept" in done.stdout
