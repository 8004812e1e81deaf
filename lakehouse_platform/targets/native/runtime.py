"""``NativeRuntime``: the stack's own copy of the code its Python processes run, outside any checkout.

The native target's Python processes (the catalog gate, the metrics exporter, the schedulers, the post-start
tasks, Flink's launcher, the services' drains) run the runtime code, the operations image's code set (its
``.dockerignore``: ``lakehouse_platform.runtime`` and each service's ``runtime.py``), on the operations runtime
(``lakehouse_platform/artifacts/runtime.py``). This resource writes that code into the stack's state
(``<state>/runtime/code``, a symlink to ``code-<digest>`` swapped atomically), so what a running service imports,
and what its watchdog execs on a restart, never depends on a checkout or an installed package, moved, upgraded or
gone. The sources travel in the resource's inputs keyed by relative path: no path of a checkout is recorded.

create, update
    Write the version beside the others, point ``code`` at it in one rename, remove the other versions. A
    service restarts when the code it runs changed (its ``LAKEHOUSE_CODE`` digest), not when any code did.
delete
    Remove the runtime directory: code, no data.
diff
    Another version of the code, another directory, new provider code: each an update. A moved directory (the
    stack's state directory moved by ``make up``) is installed in the new place and the old one removed, never a
    replacement, whose delete would run the code of the release that recorded the resource.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.providers import PlainBlob, code_changed, plain

CODE_LINK = "code"
#: What the processes run: the runtime code, the operations image's code set (``.dockerignore``), as relative path
#: globs: the runtime's shared machinery and each service package's runtime.py, with the packages they live in
#: (which import nothing).
CODE_SET = ("lakehouse_platform/__init__.py", "lakehouse_platform/runtime/**/*.py",
            "lakehouse_platform/services/__init__.py", "lakehouse_platform/services/*/__init__.py",
            "lakehouse_platform/services/*/runtime.py")


def code_sources(root: Path) -> dict[str, str]:
    """The code set's sources under ``root`` (what the package sits in: a checkout or site-packages), by relative
    path: the resource's input."""
    return {str(path.relative_to(root)): path.read_text(encoding="utf-8")
            for pattern in CODE_SET for path in sorted(root.glob(pattern))}


def digest_of(sources: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(sorted(sources.items()))).encode()).hexdigest()[:16]


def code_dir(directory: str | Path) -> Path:
    """Where the processes find the code (``PYTHONPATH``): the stable link to the current version."""
    return Path(directory) / CODE_LINK


def install(directory: str, sources: Mapping[str, str]) -> str:
    """Write the version of ``sources`` and make it current; returns its digest."""
    root, digest = Path(directory), digest_of(sources)
    version = root / f"{CODE_LINK}-{digest}"
    if not version.is_dir():
        staging = root / f".{CODE_LINK}-{digest}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        for relative, text in sources.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        os.replace(staging, version)
    link, temporary = root / CODE_LINK, root / f".{CODE_LINK}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    temporary.symlink_to(version.name)
    os.replace(temporary, link)  # atomic: a process importing now sees one version or the other, whole
    for other in root.glob(f"{CODE_LINK}-*"):
        if other != version:
            shutil.rmtree(other, ignore_errors=True)
    return digest


class NativeRuntimeProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Installs the stack's copy of the operations code (contract: module docstring)."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        directory = str(plain(props["directory"]))
        digest = install(directory, plain(props["sources"]))
        return pulumi.dynamic.CreateResult(directory, {"directory": directory, "digest": digest})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        moved = plain(olds.get("directory")) != plain(news.get("directory"))
        changed = moved or olds.get("digest") != digest_of(plain(news.get("sources") or {}))
        return pulumi.dynamic.DiffResult(changes=changed or code_changed(olds, news), replaces=[],
                                         delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        directory, before = str(plain(news["directory"])), str(plain(olds.get("directory") or ""))
        digest = install(directory, plain(news["sources"]))
        if before and Path(before) != Path(directory):
            shutil.rmtree(before, ignore_errors=True)  # the code only: the data it sat beside moved on its own
        return pulumi.dynamic.UpdateResult({"directory": directory, "digest": digest})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        shutil.rmtree(str(plain(props["directory"])), ignore_errors=True)


class NativeRuntime(pulumi.dynamic.Resource, module="native", name="NativeRuntime"):
    """The stack's copy of the operations code, at ``code_dir(directory)`` (contract: module docstring)."""

    directory: pulumi.Output[str]
    digest: pulumi.Output[str]

    def __init__(self, name: str, *, directory: str, sources: Mapping[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(NativeRuntimeProvider(), name,
                         {"directory": directory, "sources": dict(sources), "digest": None}, opts)
