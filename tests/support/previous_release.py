"""The previous release as a user has it: its own checkout, its own venv and Pulumi, deploying a native stack.

The upgrade test (tests/e2e/test_upgrade.py) deploys a stack with the previous release's program, then runs this
checkout's program on the same state, the way a platform team upgrades: the same stack file (ports, encryption
salt, secrets), the same state (exported from the previous release's backend, imported into this one's), the same
data directories (``LAKEHOUSE_STATE_DIR``, one directory both programs use).

The checkout is ``git archive`` of the release's commit (``[tool.lakehouse.releases]``, ``infra.version``), kept
under the artifact cache (``<cache>/releases/<version>-<commit>``) with its venv, so a second run reuses both;
its venv and Pulumi CLI come from its own ``make venv`` and ``make pulumi`` (the pip and Pulumi caches are warm
after this checkout's bootstrap), its artifacts from its own ``python -m infra.control artifacts``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.paths import PROJECT_ROOT, cache_base


class PreviousReleaseError(RuntimeError):
    """The previous release could not be checked out, installed or run; the message says which step."""


def _run(argv: list[str], cwd: Path, env: Mapping[str, str], what: str, timeout_s: float = 1800) -> str:
    done = subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout_s,
                          check=False)
    if done.returncode != 0:
        raise PreviousReleaseError(f"{what} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")
    return done.stdout


@dataclass(frozen=True)
class PreviousRelease:
    """One earlier release's checkout (``root``) with its own venv and Pulumi CLI."""

    version: str
    commit: str
    root: Path

    @classmethod
    def prepare(cls, version: str, commit: str) -> PreviousRelease:
        """The release's checkout, venv and Pulumi CLI, made once under the cache and reused."""
        root = cache_base() / "releases" / f"{version}-{commit[:12]}"
        if not (root / "pyproject.toml").exists():
            staging = root.with_name(root.name + f".tmp-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=PROJECT_ROOT,
                                     capture_output=True, check=False)
            if archive.returncode != 0:
                raise PreviousReleaseError(f"git archive {commit} failed: {archive.stderr.decode()[-500:]} "
                                           "(the release's commit must be in this clone's history)")
            subprocess.run(["tar", "-x", "-C", str(staging)], input=archive.stdout, check=True)
            os.replace(staging, root)
        release = cls(version, commit, root)
        env = release.base_env()
        _run(["make", "venv"], root, env, f"make venv of release {version}")
        _run(["make", "pulumi"], root, env, f"make pulumi of release {version}")
        return release

    @property
    def python(self) -> Path:
        return self.root / ".venv" / "bin" / "python"

    def base_env(self) -> dict[str, str]:
        """This process's environment without what points at this checkout's venv."""
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTEST_CURRENT_TEST")}
        venv_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
        return env

    def control(self, *args: str, env: Mapping[str, str] | None = None, timeout_s: float = 1800) -> str:
        """``python -m infra.control ARGS`` of the release, in its checkout (its own workspace and backend)."""
        return _run([str(self.python), "-m", "infra.control", *args], self.root, {**self.base_env(), **(env or {})},
                    f"release {self.version}: python -m infra.control {' '.join(args)}", timeout_s)

    def python_code(self, code: str, env: Mapping[str, str] | None = None) -> str:
        """Run ``code`` with the release's Python in its checkout; its standard output."""
        return _run([str(self.python), "-c", code], self.root, {**self.base_env(), **(env or {})},
                    f"release {self.version}: python -c ...")

    def write_isolated_stack(self, stack: str, first_port: int) -> Path:
        """``Pulumi.<stack>.yaml`` as the release's own ``infra.control.isolated`` writes it (its ports from
        ``first_port``); the state directory of the stack is not touched (``LAKEHOUSE_STATE_DIR`` decides it)."""
        code = ("import yaml; from infra.control import isolated; from infra.config import CONFIG_KEY; "
                f"platform, ports = isolated.isolated_platform({stack!r}, first_port={first_port}); "
                f"open('Pulumi.{stack}.yaml', 'w').write(yaml.safe_dump({{'config': {{CONFIG_KEY: platform}}}}, "
                "sort_keys=False)); print(ports.start, ports.stop)")
        self.python_code(code)
        return self.root / f"Pulumi.{stack}.yaml"

    def export_state(self, stack: str, env: Mapping[str, str]) -> dict[str, Any]:
        """The stack's deployment as the release's backend holds it (``pulumi stack export``)."""
        code = ("import json; from infra.control.workspace import select; "
                f"print(json.dumps(select({stack!r}).export_stack().__dict__, default=str))")
        exported: dict[str, Any] = json.loads(self.python_code(code, env).strip().splitlines()[-1])
        return exported

    def forget(self, stack: str, env: Mapping[str, str]) -> None:
        """Remove the stack from the release's backend (its state now lives in this checkout's backend)."""
        self.python_code(f"from infra.control.workspace import forget; forget({stack!r})", env)
        (self.root / f"Pulumi.{stack}.yaml").unlink(missing_ok=True)


def hand_over(release: PreviousRelease, stack: str, env: Mapping[str, str]) -> Path:
    """Move a stack the release deployed to this checkout: its stack file (salt, secrets) and its state.

    What a team does when it upgrades: the same ``Pulumi.<stack>.yaml`` and the same backend, now read by the new
    program. Returns this checkout's stack file.
    """
    from pulumi import automation as auto

    from infra.control.workspace import select

    source = release.root / f"Pulumi.{stack}.yaml"
    target = PROJECT_ROOT / source.name
    shutil.copyfile(source, target)
    exported = release.export_state(stack, env)
    select(stack).import_stack(auto.Deployment(version=exported["version"], deployment=exported["deployment"]))
    release.forget(stack, env)
    return target
