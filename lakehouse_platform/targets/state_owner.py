"""A stack's state directory belongs to the one stack that made it: (project, stack, backend), recorded in it.

A native or lab stack keeps its data under ``<state root>/<stack>`` (``lakehouse_platform.paths``), named after the
stack alone, so two checkouts (or two projects) that both deploy a stack named ``native`` would otherwise share one
platform without knowing it: the second's preview would take the first's processes for its own, its ``up`` rewrite
them, its ``down`` stop them. So the directory records its owner in ``owner.json``: the Pulumi project's name
(``Pulumi.yaml``), the stack's name and the backend its state lives in. The program refuses any other stack before
it registers a resource (``refusal``, checked by ``targets.prepare``: preview and up), and so does ``make down``
(``lakehouse_platform.control``), naming the directory, its owner and the one command that takes it over on purpose:
``lakehouse claim --stack <stack>`` (the same stack in a moved checkout whose backend moved
with it, or a stack deliberately taking over another's data).

``StateOwner`` writes the record when the stack is deployed (a dynamic resource every other resource of the target
waits for; evaluating the program writes nothing), and on ``destroy`` a disposable stack's whole directory goes with
it (tests and benchmarks leave nothing behind), while any other stack keeps its data and its record. A directory
without a record (made by a release before this one) is anyone's until the next ``up`` records its owner.
The provider travels by reference to its class (``lakehouse_platform.providers``).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic
import yaml

from lakehouse_platform.providers import PlainBlob, code_changed, plain

OWNER_FILE = "owner.json"
#: The command that records the current stack as the directory's owner (``lakehouse claim``).
CLAIM_COMMAND = "lakehouse claim --stack {stack}"


@dataclass(frozen=True)
class Identity:
    """Who a stack is: its Pulumi project, its name, the backend holding its state (``""``: not known here)."""

    project: str
    stack: str
    backend: str

    def describe(self) -> str:
        return f"stack {self.stack!r} of project {self.project!r} on backend {self.backend or '(unknown)'}"


def project_name(root: Path) -> str:
    """The project's name, from its ``Pulumi.yaml``."""
    document = yaml.safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8")) or {}
    return str(document.get("name", ""))


def normal_backend(url: str | None) -> str:
    """A backend URL as recorded: a file backend by its resolved path (``file://~/x`` and ``file:///y/../x`` alike)."""
    if not url:
        return ""
    if url.startswith("file://"):
        return "file://" + str(Path(os.path.expanduser(url.removeprefix("file://"))).resolve())
    return url.rstrip("/")


def current_backend() -> str:
    """The backend this process's Pulumi commands use: ``PULUMI_BACKEND_URL``, else ``pulumi login``'s choice in
    ``PULUMI_HOME`` (default ``~/.pulumi``), else ``""``."""
    if os.environ.get("PULUMI_BACKEND_URL"):
        return normal_backend(os.environ["PULUMI_BACKEND_URL"])
    home = Path(os.environ.get("PULUMI_HOME") or Path.home() / ".pulumi")
    try:
        chosen = json.loads((home / "credentials.json").read_text(encoding="utf-8")).get("current")
    except (OSError, ValueError, AttributeError):
        return ""
    return normal_backend(chosen if isinstance(chosen, str) else None)


def recorded(directory: Path) -> Identity | None:
    """The owner a state directory records, or None (no record, or not one this release can read)."""
    try:
        found = json.loads((directory / OWNER_FILE).read_text(encoding="utf-8"))
        return Identity(str(found["project"]), str(found["stack"]), str(found.get("backend", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refusal(directory: Path, me: Identity) -> str | None:
    """Why ``me`` may not deploy into ``directory`` (another stack's), or None."""
    owner = recorded(directory)
    if owner is None or owner == me:
        return None
    return (f"the state directory {directory} belongs to {owner.describe()}; this is {me.describe()}. Nothing was "
            f"touched. If that platform is another checkout's or another project's, give this stack a state "
            f"directory of its own (state_dir in Pulumi.{me.stack}.yaml, or LAKEHOUSE_STATE_DIR). If it is this "
            f"stack's own (a moved checkout, a backend moved), or you mean to take it over, run: "
            f"{CLAIM_COMMAND.format(stack=me.stack)}")


def claim(directory: Path, me: Identity) -> Identity | None:
    """Record ``me`` as the directory's owner (made if missing); the owner it recorded before, if another."""
    before = recorded(directory)
    directory.mkdir(parents=True, exist_ok=True)
    record = {**asdict(me), "recorded_at": datetime.now(UTC).isoformat(timespec="seconds")}
    partial = directory / f".{OWNER_FILE}.partial"
    partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, directory / OWNER_FILE)
    return before if before != me else None


class StateOwnerProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """create and update record the owner; delete removes a disposable stack's directory (module docstring)."""

    @staticmethod
    def _identity(p: dict[str, Any]) -> Identity:
        return Identity(p["project"], p["stack"], p["backend"])

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        p = plain(props)
        directory = Path(p["directory"])
        why = refusal(directory, self._identity(p))
        if why:  # the program checked it; a record written since (another checkout's up) is refused here too
            raise RuntimeError(why)
        claim(directory, self._identity(p))
        return pulumi.dynamic.CreateResult(id_=p["directory"], outs=p)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old, new = plain(olds), plain(news)
        keys = ("directory", "project", "stack", "backend", "disposable")
        changed = any(old.get(k) != new.get(k) for k in keys) or code_changed(olds, news)
        return pulumi.dynamic.DiffResult(changes=changed, replaces=[])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        p = plain(news)
        claim(Path(p["directory"]), self._identity(p))
        return pulumi.dynamic.UpdateResult(p)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        p = plain(props)
        if p.get("disposable"):
            shutil.rmtree(p["directory"], ignore_errors=True)


class StateOwner(pulumi.dynamic.Resource, module="state", name="StateOwner"):
    """The record of who owns a stack's state directory; every other resource of the target waits for it."""

    directory: pulumi.Output[str]

    def __init__(self, name: str, directory: Path, me: Identity, disposable: bool,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(StateOwnerProvider(), name, {"directory": str(directory), **asdict(me),
                                                      "disposable": disposable}, opts)


def program_identity() -> Identity:
    """The identity of the stack the running program deploys."""
    return Identity(pulumi.get_project(), pulumi.get_stack(), current_backend())
