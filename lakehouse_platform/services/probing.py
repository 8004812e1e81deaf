"""What a service's probe hooks (``ServiceDefinition.probes``) are handed and give back.

The post-deploy probes (``lakehouse_platform/probes``) ask the registry which services answer a question (their running
version, an engine's reads and refusals) instead of listing them; each service's package answers for itself in
its ``probe`` module. A hook is handed the deployed stack as the probes see it (``DeployedStack``: the stack's
outputs and what is derived from them) and, where this host can act on the services, their control
(``ServiceHands``: processes and files, natively by pid, in the lab through Docker); both are the probes' own
objects, described here by what a hook may use of them.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

VERSION = re.compile(r"\d+(?:\.\d+)+")


class DeployedStack(Protocol):
    """A deployed stack as the probes read it (``lakehouse_platform.probes.support.stack.Stack``)."""

    outputs: dict[str, Any]
    target: str

    @property
    def identity(self) -> str: ...

    @property
    def reader_identity(self) -> str: ...

    @property
    def credentials(self) -> dict[str, Any]: ...

    @property
    def host_profiles(self) -> dict[str, Any]: ...

    @property
    def version_manifest(self) -> dict[str, str]: ...

    def endpoint(self, service: str, port: str) -> str | None: ...

    def service_record(self, service: str) -> dict[str, Any]: ...

    def creds_of(self, identity: str | None = None) -> dict[str, Any]: ...

    def certificate_file(self, name: str) -> str: ...


class ServiceHands(Protocol):
    """The probes' hands on a service's processes and files (``lakehouse_platform.control.services.ServiceControl``)."""

    def processes(self, service: str) -> list[Any]: ...

    def list_dir(self, service: str, path: str) -> list[str]: ...

    def fetch_file(self, service: str, path: str, dest: Path) -> Path: ...

    def describe(self, service: str) -> str: ...


@dataclass(frozen=True)
class VersionReading:
    """One version read from a running service: what runs, how it was read, and why it may differ from its pin."""

    running: str | None
    source: str
    reason: str = ""


#: A service's version hook: (stack, hands or None) -> manifest name -> reading; empty where it cannot read here.
VersionHook = Callable[[DeployedStack, "ServiceHands | None"], Mapping[str, VersionReading]]


class EngineProbe(Protocol):
    """An engine service as the cross-engine probes drive it (``ProbeHooks.engine``), acting as an identity."""

    name: str

    def count(self, identity: str | None, namespace: str, table: str, snapshot_id: int | None = None) -> int:
        """Rows of ``namespace.table`` (at ``snapshot_id``) read as ``identity`` through the catalog it reaches."""
        ...

    def writes(self, identity: str, namespace: str, table: str) -> list[tuple[str, Callable[[], Any]]]:
        """Every kind of write (and table procedure) attempted as ``identity``: what the read-only one must be
        refused, each as (what, attempt)."""
        ...

    def refusals(self) -> list[tuple[str, bool, str]]:
        """Requests without or with wrong credentials: (what, refused, detail) each."""
        ...


def first_version(text: str) -> str | None:
    """The first dotted version number in ``text``."""
    match = VERSION.search(text or "")
    return match.group(0) if match else None


def http_json(url: str, timeout: float = 10) -> dict[str, Any]:
    """GET ``url`` as JSON, the environment's proxies ignored (the platform's addresses are local)."""
    import requests

    session = requests.Session()
    session.trust_env = False
    response = session.get(url, timeout=timeout, headers={"Accept": "application/json"})
    response.raise_for_status()
    return dict(response.json())


def jar_build_version(jar: Path) -> str | None:
    """The Iceberg build a jar was made from, as the jar records it (``iceberg-build.properties``)."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read("iceberg-build.properties").decode()
    found = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return found.get("git.build.version")
