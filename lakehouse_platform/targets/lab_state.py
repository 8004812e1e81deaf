"""``LabState``: the lab stack's state directory on the host as a Pulumi dynamic resource, kept whole or not at all.

The lab keeps a stack's data in two places: Docker volumes (the store's objects, PostgreSQL, Kafka) and
directories under ``<state root>/<stack>`` that containers bind-mount and host-side operations read (the
fixture's SQLite catalog, Flink's checkpoints and savepoints, the run record, the backups). ``destroy``
deletes the volumes; if it kept the directories, the next ``up`` would build on a catalog and savepoints that
point at files which are gone. So the directory has one owner, this resource, which every container of the
stack waits for: it is created before them and deleted after them, and its delete removes the directory.
Decision: ``destroy`` keeps none of a lab stack's state.

``create`` finds the directory either absent (a first ``up``) or left over, with content: a stack destroyed by
an older version of the program, by hand, or a directory restored from elsewhere, whose volumes are gone.
That half-kept state is refused, naming the directory and how to clear it, before any container starts;
nothing is deleted without the operator. A new directory (a release or a ``state_dir`` setting that keeps the
stack's state elsewhere: 0.4.0 moved it out of the checkout) is an *update* that moves the directory with its
data, never a replacement (whose delete would remove the catalog and the savepoints): a rename on one
filesystem, which the running containers' bind mounts follow until their replacements start on the new path;
across filesystems a copy, where what a container writes between the copy and its replacement is not carried.
The provider ships by value (``lakehouse_platform.by_value``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.by_value import ByValue, code_changed, plain
from lakehouse_platform.targets.state_move import move_tree
from lakehouse_platform.targets.state_owner import OWNER_FILE

#: Written at create: the directory belongs to the stack deployed with this resource.
MARKER = ".lab-state"


class HalfKeptState(Exception):
    """The state directory holds a former deployment's files whose volumes are gone."""


def leftover(directory: Path) -> list[str]:
    """What a directory holds from an earlier deployment (names, at most 10), or [] when it is absent or empty (its
    owner's record aside: ``state_owner`` writes it just before)."""
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if p.name != OWNER_FILE)[:10]


def claim(directory: Path, stack: str) -> None:
    """Take the directory for this deployment: refuse a half-kept one, else create it with the marker."""
    found = leftover(directory)
    if found:
        raise HalfKeptState(
            f"the lab stack {stack!r} finds {directory} holding files of an earlier deployment "
            f"({', '.join(found)}) whose volumes are gone: the catalog and savepoints there point at objects that no "
            f"longer exist. Remove the directory (rm -rf {directory}) and run `pulumi up` again; "
            "`make down STACK=lab` removes it with the stack from now on.")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text(f"{stack}\n")


def release(directory: Path) -> None:
    """Remove the directory and everything in it (the volumes went with the containers before it)."""
    try:
        shutil.rmtree(directory)
    except FileNotFoundError:
        return
    except PermissionError as exc:
        raise HalfKeptState(f"cannot remove {directory} ({exc}): a container wrote files this user may not delete; "
                            f"remove it as their owner (sudo rm -rf {directory})") from None


class LabStateProvider(ByValue, pulumi.dynamic.ResourceProvider):
    """create claims the directory, update moves it, delete removes it."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        p = plain(props)
        claim(Path(p["directory"]), p["stack"])
        return pulumi.dynamic.CreateResult(id_=p["directory"], outs=p)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old, new = plain(olds), plain(news)
        moved = old.get("directory") != new.get("directory")
        changed = moved or old.get("stack") != new.get("stack") or code_changed(olds, news)
        return pulumi.dynamic.DiffResult(changes=changed, replaces=[])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        """A new directory: the old one moved there with its data (refused onto one that holds data); a new stack
        name or new provider code: recorded."""
        old, new = Path(plain(olds)["directory"]), Path(plain(news)["directory"])
        if old != new:
            if old.is_dir():
                move_tree(old, new)
            else:
                claim(new, plain(news)["stack"])
        return pulumi.dynamic.UpdateResult(plain(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        release(Path(plain(props)["directory"]))


class LabState(pulumi.dynamic.Resource, module="lab", name="LabState"):
    """A lab stack's state directory: created before its containers, removed after them on destroy."""

    directory: pulumi.Output[str]

    def __init__(self, name: str, directory: str, stack: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(LabStateProvider(), name, {"directory": directory, "stack": stack}, opts)
