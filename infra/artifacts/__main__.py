"""``python -m infra.artifacts fetch --stack native [--only NAME]``: obtain a stack's artifacts, print a table.

The pins come from the stack's spec (``Pulumi.<stack>.yaml`` over the registry's defaults): what
``pulumi up`` looks up is exactly what this fetches.
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

from infra.artifacts import cache
from infra.artifacts.clients import duckdb_artifact
from infra.artifacts.recipe import Artifact, ArtifactError
from infra.artifacts.resolver import FetchingResolver
from infra.config import ConfigError, load_stack


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.artifacts", description=(__doc__ or "").split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser("fetch", help="fetch every artifact a stack needs (or --only some)")
    fetch_cmd.add_argument("--stack", default="native", help="the stack whose pins to fetch (default: native)")
    fetch_cmd.add_argument("--only", action="append", help="fetch only this service's artifact (repeatable)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        spec = load_stack(args.stack)
        resolver = FetchingResolver(set(args.only) if args.only else None)
        found = resolver.resolve(spec)
    except (ArtifactError, ConfigError) as error:
        Console(stderr=True).print(f"[bold red]error:[/] {error}")
        return 1
    root = cache.cache_root()
    table = Table(title=f"artifacts of stack {args.stack} (target {spec.target.value}; cache: {root})")
    for column in ("artifact", "requested", "obtained", "path", "size", "sha256", "seconds"):
        table.add_column(column, overflow="fold", no_wrap=column != "path")
    rows: list[tuple[Artifact, float | None]] = [(a, resolver.timings.get(n)) for n, a in found.services.items()]
    rows += [(a, resolver.timings.get(n)) for n, a in found.cloud.items()]
    if found.spark_jars is not None:
        rows.append((found.spark_jars, resolver.timings.get("spark-jars")))
    if found.duckdb is not None:
        rows.append((duckdb_artifact(), None))
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


if __name__ == "__main__":
    sys.exit(main())
