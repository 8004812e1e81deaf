"""What a stack's target runs or mounts from the host, resolved (``services.resolver`` resolves it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.clients import DuckDBExtensions

if TYPE_CHECKING:
    from lakehouse_platform.model import PlatformSpec


@dataclass(frozen=True)
class StackArtifacts:
    """Everything a stack's target runs or mounts from the host, resolved."""

    services: dict[str, Artifact] = field(default_factory=dict)
    java: dict[int, Path] = field(default_factory=dict)
    spark_jars: Artifact | None = None
    duckdb: DuckDBExtensions | None = None
    cloud: dict[str, Artifact] = field(default_factory=dict)  # service -> what the aws target uploads for it
    runtime: Artifact | None = None  # natively: the Python the project's own processes run on (artifacts.runtime)

    def java_home(self, major: int) -> Path:
        return self.java[major]


def host_clients(spec: PlatformSpec, artifacts: StackArtifacts) -> dict[str, Any] | None:
    """What the engines on this host load (``clients``): the same on every target whose clients run here.

    ``spark_jars`` (Spark's ``spark.jars``: Iceberg's runtime and AWS bundle, from the artifact cache),
    ``duckdb_extensions`` (DuckDB's LOAD statements, from the ``duckdb-ext-*`` packages) and
    ``obtained_versions``: what each of them is, with the reason wherever that is not the stack's pin, so the
    version manifest reports it as the target's declared deviation (DuckDB 1.4.4 against the chapter's 1.5.5).
    None where no client runs on this host (aws).
    """
    if artifacts.spark_jars is None and artifacts.duckdb is None:
        return None
    found: dict[str, Any] = {}
    obtained: dict[str, dict[str, str]] = {}
    if artifacts.spark_jars is not None:
        jars = artifacts.spark_jars
        found["spark_jars"] = [str(p) for p in jars.classpath]
        obtained["iceberg-spark-runtime"] = {
            "version": jars.version,
            "reason": "; ".join(jars.notes) or f"iceberg-spark-runtime {jars.version} from Maven Central"}
    if artifacts.duckdb is not None:
        duck = artifacts.duckdb
        found["duckdb_extensions"] = duck.load_statements()
        reason = f"DuckDB {duck.duckdb_version} on this host"
        if duck.duckdb_version != spec.engines.duckdb:
            reason = (f"engines.duckdb_native: newest DuckDB with extensions on PyPI (duckdb-ext-* "
                      f"{duck.duckdb_version}); {spec.engines.duckdb} elsewhere")
        obtained["duckdb"] = {"version": duck.duckdb_version, "reason": reason}
    found["obtained_versions"] = obtained
    return found
