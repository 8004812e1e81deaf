"""Other checkouts of the project driving one stack: a clone of this commit, or of the previous release.

What the e2e tier's moved-checkout, previous-release and upgrade (issue 26: data in flight) tests stand on: a
``git clone`` of a commit into a directory of its own, its own venv (``make venv``) and
Pulumi CLI (``make pulumi``, the cached build), and the operator's commands run *in that clone* with its own
Python (``python -c`` against its ``<package>.control``), on a Pulumi backend the caller shares explicitly.

Nothing here imports the clone's code into this process: each call is a subprocess of the clone's venv, as a
user in that directory would run it. Stacks are isolated copies of the native stack made by the clone's own
``<package>.control.isolated`` (a release that predates ``state_dir`` keeps its state under its checkout, as it did).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakehouse_platform import version
from tests.support import REPO_ROOT

#: How long one command of a clone may take (a first `pulumi up` of the whole platform takes a few minutes).
COMMAND_TIMEOUT_S = 1500


def previous_release_ref() -> str:
    """The previous release (``lakehouse_platform.version.previous_release``: ``[tool.lakehouse.releases]``): its tag
    ``v<version>`` if this repository has it, else its commit."""
    previous = version.previous_release()
    if previous is None:
        raise LookupError(f"release {version.PLATFORM_VERSION} is the first: there is no previous release")
    tag, commit = f"v{previous[0]}", previous[1]
    found = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}"],
                           capture_output=True, text=True, check=False)
    return tag if found.returncode == 0 else commit


def head_commit() -> str:
    """This checkout's committed HEAD (a clone sees commits only: run the tier on a committed tree)."""
    return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


class CheckoutCommandFailed(AssertionError):
    """A command in a clone failed; the message carries its output's end."""


@dataclass
class Checkout:
    """One clone of the project at ``ref`` in ``root``, driven with its own venv, on a backend given by ``env``."""

    root: Path
    ref: str
    env: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def clone(cls, ref: str, root: Path, env: dict[str, str] | None = None) -> Checkout:
        """``git clone`` of this repository, ``ref`` checked out, its venv and Pulumi CLI made (timed)."""
        started = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(REPO_ROOT), str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "checkout", "--quiet", "--detach", ref], check=True)
        checkout = cls(root, ref, dict(env or {}))
        checkout.make("venv")
        checkout.make("pulumi")
        checkout.timings["clone, venv, pulumi"] = time.monotonic() - started
        return checkout

    @property
    def package(self) -> str:
        """The clone's top-level package: ``lakehouse_platform``, or ``infra`` in a release before 0.5.0."""
        return "lakehouse_platform" if (self.root / "lakehouse_platform").is_dir() else "infra"

    def environment(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PULUMI_"))}
        return {**base, **self.env}

    def make(self, target: str) -> None:
        done = subprocess.run(["make", "-s", target], cwd=self.root, env=self.environment(), capture_output=True,
                              text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise CheckoutCommandFailed(f"make {target} in {self.root} ({self.ref}) failed:\n"
                                        f"{(done.stdout + done.stderr)[-4000:]}")

    def python(self, code: str, what: str) -> str:
        """Run ``code`` with the clone's Python in the clone (its ``package``); its stdout. Timed under ``what``."""
        started = time.monotonic()
        done = subprocess.run([str(self.root / ".venv" / "bin" / "python"), "-c", textwrap.dedent(code)],
                              cwd=self.root, env=self.environment(), capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
        self.timings[what] = time.monotonic() - started
        if done.returncode != 0:
            raise CheckoutCommandFailed(f"{what} in {self.root} ({self.ref}) failed:\n{done.stderr[-6000:]}")
        return done.stdout

    @property
    def command_module(self) -> str:
        """The clone's command line as a module: ``lakehouse_platform`` (the ``lakehouse`` console script), or
        ``<package>.control`` in a release before it had one."""
        return self.package if (self.root / self.package / "cli.py").is_file() else f"{self.package}.control"

    def control(self, *args: str) -> str:
        """``python -m <its command line> ARGS`` of the clone (as its user types it); its stdout."""
        started = time.monotonic()
        what = " ".join(args)
        done = subprocess.run([str(self.root / ".venv" / "bin" / "python"), "-m", self.command_module, *args],
                              cwd=self.root, env=self.environment(), capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
        self.timings[what] = time.monotonic() - started
        if done.returncode != 0:
            raise CheckoutCommandFailed(f"python -m {self.command_module} {what} in {self.root} ({self.ref}) failed:\n"
                                        f"{(done.stdout + done.stderr)[-6000:]}")
        return done.stdout

    # -- the operator's commands, in the clone ------------------------------------------------------------

    def artifacts(self, stack: str) -> None:
        """``make artifacts`` for the stack, as the clone's release fetches them (into the shared cache)."""
        self.control("artifacts", "--stack", stack)

    def isolated_stack(self, stack: str, first_port: int, overrides: dict[str, Any]) -> Path:
        """The clone's own isolated copy of the native stack (its own generator: a release writes what it knew)."""
        self.python(f"""
            from {self.package}.control import isolated
            isolated.isolated_stack({stack!r}, first_port={first_port}, overrides={overrides!r})
            """, f"isolated stack {stack}")
        return self.root / f"Pulumi.{stack}.yaml"

    def up(self, stack: str) -> str:
        """``make up``'s deploy (``commands.up``: what this release does before and in ``pulumi up``)."""
        return self.python(f"""
            from {self.package}.control import commands
            commands.up({stack!r}, quiet=True)
            """, f"up {stack}")

    def refresh(self, stack: str) -> None:
        self.python(f"""
            from {self.package}.control.workspace import refresh
            refresh({stack!r})
            """, f"refresh {stack}")

    def down(self, stack: str, forget: bool = True) -> str:
        """``make down`` (``pulumi destroy``), its whole output (warnings included); the stack forgotten after."""
        return self.python(f"""
            from {self.package}.control import workspace
            seen = []
            handle = workspace.select({stack!r})
            handle.destroy(on_output=seen.append, color="never")
            print("\\n".join(seen))
            if {forget!r}:
                workspace.forget({stack!r})
            """, f"down {stack}")

    def outputs(self, stack: str) -> dict[str, Any]:
        out = self.python(f"""
            import json
            from {self.package}.control.workspace import outputs
            print(json.dumps(outputs({stack!r})))
            """, f"outputs {stack}")
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result

    def exported_state(self, stack: str) -> str:
        """``pulumi stack export`` of the stack, as text (what the backend holds of it)."""
        return self.python(f"""
            import json
            from {self.package}.control.workspace import select
            print(json.dumps(select({stack!r}).export_stack().deployment))
            """, f"export {stack}")

    def share_stack_file(self, stack: str, other: Checkout) -> None:
        """The stack's config (with the secrets' salt Pulumi wrote at its creation) into another checkout."""
        shutil.copy2(self.root / f"Pulumi.{stack}.yaml", other.root / f"Pulumi.{stack}.yaml")


def backend_env(backend: Path) -> dict[str, str]:
    """A file backend the clones share explicitly (a release that predates it uses its own checkout's)."""
    backend.mkdir(parents=True, exist_ok=True)
    return {"PULUMI_BACKEND_URL": f"file://{backend}"}


def live(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie has exited)."""
    import psutil

    found = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.append(pid)
        except psutil.NoSuchProcess:
            continue
    return found


def deploy_previous_release(checkout: Checkout, stack: str, first_port: int, overrides: dict[str, Any]) -> None:
    """The previous release's ``checkout`` (``Checkout.clone(previous_release_ref(), ...)``) deploys ``stack`` (an
    isolated copy of its native stack on ``first_port``'s block, with ``overrides``) on its own backend (it predates
    a chosen one), its artifacts first: the start of an upgrade. Its outputs: ``checkout.outputs(stack)``; data can
    be written with its own clients there."""
    checkout.isolated_stack(stack, first_port, overrides)
    checkout.artifacts(stack)
    checkout.up(stack)


def take_over(previous: Checkout, stack: str) -> dict[str, str]:
    """What this checkout needs to drive a stack ``previous`` deployed: its stack file (with the secrets' salt)
    copied here, and the environment naming ``previous``'s backend (set it, e.g. ``monkeypatch.setenv``).

    This release's ``make up`` then moves the stack's data to ``lakehouse_platform.paths.stack_state_dir(stack)``, which
    must be empty (a destroy keeps data: clear it before the test)."""
    shutil.copy2(previous.root / f"Pulumi.{stack}.yaml", REPO_ROOT / f"Pulumi.{stack}.yaml")
    return {"PULUMI_BACKEND_URL": f"file://{previous.root / '.pulumi-state'}"}
