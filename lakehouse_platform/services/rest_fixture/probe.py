"""What the post-deploy probes ask of the REST fixture: its version, and what they start a throwaway fixture with.

The version manifest reads the fixture's runtime jar from its process's classpath (it reports no version over
HTTP). The probes' control experiments (Book 1's in-memory SQLite, the fixture on the platform's PostgreSQL, a
stand-in catalog behind the gate) start a fixture of their own on this host from the native target's build: they
reach this module as the ``REFERENCE_CATALOG`` capability's support.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.capabilities import DATABASE_PASSWORD
from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading, jar_build_version
from lakehouse_platform.services.rest_fixture.config import (
    NAME,
    POSTGRES_CLIENTS,
    pgpass_line,
    postgres_jdbc_uri,
    table_default_env,
)

__all__ = ["NAME", "FixtureRuntime", "native_build", "on_postgres", "runtime", "table_default_env", "version"]


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """The fixture's runtime jar on its process's classpath, else the Iceberg build its ``-jar`` records."""
    if hands is None:
        return {}
    processes = hands.processes(NAME)
    where = hands.describe(NAME)
    match = re.search(r"iceberg-open-api-(\d+(?:\.\d+)+)\.jar", " ".join(p.args for p in processes))
    if match:
        return {NAME: VersionReading(match.group(1), f"classpath of {where} (iceberg-open-api-{match.group(1)}.jar)")}
    # A jar named without its version (the images' iceberg-rest-adapter.jar): the Iceberg build it records.
    for process in processes:
        args = process.args.split()
        if "-jar" in args[:-1]:
            jar = args[args.index("-jar") + 1]
            path = jar if jar.startswith("/") else f"{process.cwd.rstrip('/')}/{jar}"
            with tempfile.TemporaryDirectory() as tmp:
                found = jar_build_version(hands.fetch_file(NAME, path, Path(tmp) / "fixture.jar"))
            return {NAME: VersionReading(found, f"iceberg-build.properties of {path} (-jar of {where})")}
    raise RuntimeError(f"no iceberg-open-api jar and no -jar on the classpath of {where}")


@dataclass(frozen=True)
class FixtureRuntime:
    """What starts a fixture process on this host: a JDK's java, the classpath, the main class."""

    java: Path
    classpath: tuple[str, ...]
    main_class: str


def runtime(spec: PlatformSpec) -> FixtureRuntime | None:
    """The fixture build ``spec`` (the native stack's) runs, from the artifact cache (``make artifacts``), or None."""
    from lakehouse_platform.artifacts import cache, java
    from lakehouse_platform.artifacts.artifact import ArtifactError
    from lakehouse_platform.services.context import ServiceContext
    from lakehouse_platform.services.rest_fixture.artifact import artifact_key

    found = cache.lookup(artifact_key(ServiceContext(spec, NAME)))
    if found is None or found.main_class is None:
        return None
    try:
        home = java.find_java(17)
    except ArtifactError:
        return None
    return FixtureRuntime(java=home / "bin" / "java", classpath=tuple(str(p) for p in found.classpath),
                          main_class=found.main_class)


def native_build(outputs: Mapping[str, Any]) -> FixtureRuntime | None:
    """The fixture build a native stack runs (its outputs' ``native.artifacts``), or None."""
    native = outputs.get("native") or {}
    fixture = (native.get("artifacts") or {}).get(NAME)
    if not fixture or not native.get("java_home"):
        return None
    return FixtureRuntime(java=Path(native["java_home"]) / "bin" / "java", classpath=tuple(fixture["classpath"]),
                          main_class=str(fixture["main_class"]))


def on_postgres(pg_address: str, pg_password: str, catalog_name: str) -> tuple[str, dict[str, str], str]:
    """A fixture on the platform's PostgreSQL as ``catalog.fixture_backend: postgres`` configures it: its JDBC URI,
    its environment (pooled connections, its pgpass file at ``{work}/pgpass``, a catalog name of its own) and the
    pgpass file's content."""
    pgpass = pgpass_line().replace(secret(DATABASE_PASSWORD), pg_password)
    env = {"PGPASSFILE": "{work}/pgpass", "CATALOG_CLIENTS": str(POSTGRES_CLIENTS),
           "CATALOG_CATALOG_NAME": catalog_name}
    return postgres_jdbc_uri(pg_address), env, pgpass
