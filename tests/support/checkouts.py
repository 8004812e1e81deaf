"""Other checkouts of the project driving one stack: a clone of this commit, or of an earlier release.

What the e2e tier's moved-checkout and upgrade (data in flight, in place) tests stand on: a ``git clone`` of a
commit into a directory of its own, its own venv (``make venv``) and Pulumi CLI (``make pulumi``, the cached
build), and the operator's commands run *in that clone* with its own Python (``python -c`` against its
``<package>.control``, ``make``), on its own backend or one the caller shares explicitly. The upgrade moves a clone
to another commit in place (``Checkout.checkout``), as a user with one checkout does.

Nothing here imports the clone's code into this process: each call is a subprocess of the clone's venv, as a
user in that directory would run it. Stacks are isolated copies of the native stack made by the clone's own
``<package>.control.isolated`` (a release that predates ``state_dir`` keeps its state under its checkout, as it did).
"""

from __future__ import annotations

import json
import os
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


#: Upgrade from another supported release than the previous one (``make test`` upgrades from the previous release):
#: ``LAKEHOUSE_UPGRADE_FROM=0.3.0``.
UPGRADE_FROM = "LAKEHOUSE_UPGRADE_FROM"


def upgrade_from() -> tuple[str, str] | None:
    """The release an upgrade test starts from: ``$LAKEHOUSE_UPGRADE_FROM`` (a recorded release), else the previous
    release (``lakehouse_platform.version.previous_release``: ``[tool.lakehouse.releases]``); (version, commit)."""
    chosen = os.environ.get(UPGRADE_FROM)
    if not chosen:
        return version.previous_release()
    releases = version.releases()
    if chosen not in releases:
        raise ValueError(f"{UPGRADE_FROM}={chosen}: not a recorded release ({', '.join(releases)})")
    return chosen, releases[chosen]


def previous_release_ref() -> str:
    """The release to start from (``upgrade_from``): its tag ``v<version>`` if this repository has it, else its
    commit."""
    previous = upgrade_from()
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
    """A command in a clone failed; the message carries its output's end, ``output`` all of it."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


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

    def make(self, target: str, **variables: str) -> str:
        """``make TARGET VAR=value...`` in the clone, as its user types it (timed under the command); its output."""
        argv = ["make", "-s", target, *(f"{key}={value}" for key, value in variables.items())]
        started = time.monotonic()
        # One stream, in the order it was written: a failure's message is the end of what the user saw.
        done = subprocess.run(argv, cwd=self.root, env=self.environment(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
        self.timings[" ".join(argv[2:])] = time.monotonic() - started
        if done.returncode != 0:
            raise CheckoutCommandFailed(f"{' '.join(argv)} in {self.root} ({self.ref}) failed:\n"
                                        f"{done.stdout[-6000:]}", done.stdout)
        return done.stdout

    def checkout(self, ref: str) -> None:
        """``git checkout`` of ``ref`` in this clone: the release's files replaced in place (what a user upgrading in
        one checkout does); what git does not track (the venv, stack files, the backend, data) stays."""
        # What this repository committed since the clone was made (a clone sees commits only).
        subprocess.run(["git", "-C", str(self.root), "fetch", "--quiet", str(REPO_ROOT), ref], check=True)
        subprocess.run(["git", "-C", str(self.root), "checkout", "--quiet", "--detach", ref], check=True)
        self.ref = ref

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

    def preview_plan(self, stack: str) -> dict[str, list[str]]:
        """What ``pulumi preview`` of the stack would do, by operation: {op: [resource names]} (``same`` too)."""
        out = self.python(f"""
            import json
            from {self.package}.control.workspace import select
            plan = {{}}
            def step(event):
                if event.resource_pre_event:
                    meta = event.resource_pre_event.metadata
                    plan.setdefault(str(getattr(meta.op, "value", meta.op)), []).append(meta.urn.split("::")[-1])
            select({stack!r}).preview(on_event=step, color="never")
            print(json.dumps(plan))
            """, f"preview {stack}")
        plan: dict[str, list[str]] = json.loads(out.strip().splitlines()[-1])
        return plan

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
