"""The project's Pulumi CLI, run from Python: environment, stacks, outputs.

The CLI is the project's own build (.tools/bin, scripts/install-pulumi.sh) with the environment
scripts/pulumi-env.sh sets up (local file backend, no update checks, no plugin downloads, the lab
passphrase unless one is set). Used by the native target's commands, the tests and the probes.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from typing import Any

from infra.spec.loader import PROJECT_ROOT

# Provider packages installed in the venv that a native stack never uses and that no registry here
# can supply: the language host must not make the engine ask for them (PULUMI_PYTHON_SKIP_PLUGINS,
# tools/pulumi-language-python/plugins.go).
NATIVE_SKIP_PLUGINS = "aws,docker"


@functools.cache
def _script_env() -> tuple[tuple[str, str], ...]:
    script = PROJECT_ROOT / "scripts" / "pulumi-env.sh"
    out = subprocess.run(["bash", "-c", f"source '{script}' >/dev/null && env -0"], capture_output=True,
                         check=True, env=os.environ.copy()).stdout
    return tuple(tuple(item.split("=", 1)) for item in out.decode().split("\0") if "=" in item)  # type: ignore[misc]


@functools.cache
def _is_native(stack: str) -> bool:
    from infra.spec import ConfigError, Target, load_stack

    try:
        return load_stack(stack).target is Target.NATIVE
    except ConfigError:
        return False  # Pulumi itself reports the stack's problem


def pulumi_env(stack: str | None = None) -> dict[str, str]:
    """The environment of scripts/pulumi-env.sh (read from that script: one source of truth)."""
    env = dict(_script_env())
    if stack is not None and _is_native(stack):
        env.setdefault("PULUMI_PYTHON_SKIP_PLUGINS", NATIVE_SKIP_PLUGINS)
    return env


def pulumi(*args: str, stack: str, capture: bool = False, check: bool = True) -> subprocess.CompletedProcess:
    """Run the project's Pulumi CLI on a stack, from the project root."""
    argv = ["pulumi", *args, "--stack", stack, "--non-interactive"]
    return subprocess.run(argv, cwd=PROJECT_ROOT, env=pulumi_env(stack), check=check, text=True,
                          capture_output=capture)


def ensure_stack(stack: str) -> None:
    """Create the stack (passphrase secrets) on first use."""
    env = pulumi_env(stack)
    listed = subprocess.run(["pulumi", "stack", "ls", "--json"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                            text=True, check=True)
    if stack not in {s["name"] for s in json.loads(listed.stdout or "[]")}:
        subprocess.run(["pulumi", "stack", "init", stack, "--secrets-provider", "passphrase", "--non-interactive"],
                       cwd=PROJECT_ROOT, env=env, check=True)


def outputs(stack: str) -> dict[str, Any]:
    """The stack's outputs, secrets shown (for clients on this host)."""
    done = pulumi("stack", "output", "--json", "--show-secrets", stack=stack, capture=True)
    return json.loads(done.stdout or "{}")
