"""A real ``pulumi preview --json`` of a small stand-in of the platform's graph (``data/toy/__main__.py``).

``run_toy`` deploys the toy with the Pulumi CLI the project runs (``lakehouse_platform.control.toolchain``) into a throwaway
backend, changes its config (a memory change, a new data directory, a service removed, one added) and returns what
``pulumi preview --json`` printed. ``python -m tests.review.change.toy`` rewrites ``data/preview.json``, the unit
tier's copy of it (source positions and stack traces, which name this machine's paths, left out).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lakehouse_platform.control import toolchain
from lakehouse_platform.control.workspace import pulumi_env

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "data" / "preview.json"
PROGRAM = HERE / "data" / "toy" / "__main__.py"
CHANGES = {"toy:trinoMemory": "12GiB", "toy:pgDataDir": "/var/lib/postgresql/18", "toy:gate": "false",
           "toy:spark": "true"}


def run_toy(workdir: Path, tool: toolchain.Toolchain) -> dict[str, Any]:
    """Deploy the toy, change its config, and return its ``pulumi preview --json``."""
    project = workdir / "project"
    project.mkdir(parents=True)
    shutil.copy(PROGRAM, project / "__main__.py")
    venv = Path(sys.executable).parent.parent
    (project / "Pulumi.yaml").write_text(f"name: lakehouse-platform\nruntime:\n  name: python\n  options:\n"
                                         f"    toolchain: pip\n    virtualenv: {venv}\n")
    env = {**os.environ, **pulumi_env(None, tool), "PULUMI_BACKEND_URL": f"file://{workdir / 'state'}",
           "PULUMI_HOME": str(workdir / "home"), "PULUMI_CONFIG_PASSPHRASE": "toy",
           "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true"}
    (workdir / "state").mkdir()

    def pulumi(*args: str) -> str:
        done = subprocess.run([str(tool.pulumi), *args, "--stack", "toy"], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, f"pulumi {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return done.stdout

    subprocess.run([str(tool.pulumi), "stack", "init", "toy"], cwd=project, env=env, capture_output=True,
                   timeout=120, check=True)
    pulumi("up", "--yes", "--skip-preview")
    for key, value in CHANGES.items():
        pulumi("config", "set", key, value)
    return json.loads(pulumi("preview", "--json"))


def strip(preview: dict[str, Any]) -> dict[str, Any]:
    """The preview without what names this machine (source positions, stack traces, timestamps)."""
    noisy = {"sourcePosition", "stackTrace", "created", "modified"}

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in noisy}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return {key: clean(value) for key, value in preview.items() if key != "duration"}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        FIXTURE.write_text(json.dumps(strip(run_toy(Path(tmp), toolchain.choose())), indent=2) + "\n")
    print(f"wrote {FIXTURE}")
