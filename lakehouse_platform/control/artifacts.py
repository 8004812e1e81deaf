"""``lakehouse artifacts --stack native [--only NAME]``:
obtain a stack's artifacts, print a table.

The pins come from the stack's spec (``Pulumi.<stack>.yaml`` over the registry's defaults): what
``pulumi up`` looks up is exactly what this fetches.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.table import Table

from lakehouse_platform.artifacts import cache
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.artifacts.clients import duckdb_artifact
from lakehouse_platform.config import ConfigError, load_stack
from lakehouse_platform.services.resolver import FetchingResolver


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def fetch(stack: str, only: list[str] | None = None) -> int:
    """Fetch every artifact ``stack`` needs (or ``only`` some services'), print what was obtained; 1 on an error."""
    started = time.monotonic()
    try:
        spec = load_stack(stack)
        resolver = FetchingResolver(set(only) if only else None)
        found = resolver.resolve(spec)
    except (ArtifactError, ConfigError) as error:
        Console(stderr=True).print(f"[bold red]error:[/] {error}")
        return 1
    root = cache.cache_root()
    table = Table(title=f"artifacts of stack {stack} (target {spec.target.value}; cache: {root})")
    for column in ("artifact", "requested", "obtained", "path", "size", "sha256", "seconds"):
        table.add_column(column, overflow="fold", no_wrap=column != "path")
    rows: list[tuple[Artifact, float | None]] = [(a, resolver.timings.get(n)) for n, a in found.services.items()]
    rows += [(a, resolver.timings.get(n)) for n, a in found.cloud.items()]
    if found.spark_jars is not None:
        rows.append((found.spark_jars, resolver.timings.get("spark-jars")))
    if found.duckdb is not None:
        rows.append((duckdb_artifact(), None))
    if found.runtime is not None:
        rows.append((found.runtime, resolver.timings.get(found.runtime.name)))
    for artifact, seconds in rows:
        path = artifact.path
        shown = f"<cache>/{path.relative_to(root)}" if path.is_relative_to(root) else str(path)
        table.add_row(artifact.name, artifact.requested, artifact.version, shown, _human(artifact.size_bytes),
                      artifact.sha256[:12], "-" if seconds is None else f"{seconds:.1f}")
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    for artifact, _ in rows:
        for note in artifact.notes:
            cache.console.print(f"[dim]{artifact.name}: {note}[/]")
    for major, home in sorted(found.java.items()):
        cache.console.print(f"[dim]java >= {major}: {home}[/]")
    cache.console.print(f"[dim]total {time.monotonic() - started:.1f} s[/]")
    return 0

