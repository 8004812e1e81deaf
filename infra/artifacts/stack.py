"""What a stack's target runs or mounts from the host, resolved (``infra.services.resolver`` resolves it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from infra.artifacts.artifact import Artifact
from infra.artifacts.clients import DuckDBExtensions


@dataclass(frozen=True)
class StackArtifacts:
    """Everything a stack's target runs or mounts from the host, resolved."""

    services: dict[str, Artifact] = field(default_factory=dict)
    java: dict[int, Path] = field(default_factory=dict)
    spark_jars: Artifact | None = None
    duckdb: DuckDBExtensions | None = None
    cloud: dict[str, Artifact] = field(default_factory=dict)  # service -> what the aws target uploads for it

    def java_home(self, major: int) -> Path:
        return self.java[major]
