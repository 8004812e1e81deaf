"""Benchmark: the recovery drill's recovery time (and point), on an isolated native stack.

Run: .venv/bin/python bench/bench_recovery.py [--tables 10] [--commits 5] [--rounds 1]

Deploys ``bench`` (its own ports and state), creates ``--tables`` tables with ``--commits`` commits each,
takes a backup with the platform's own command, commits once more to every table (what the backup
misses), then per round: (a) loses the catalog's database and restores it (``recovery restore``:
backup + roll forward), (b) loses it again and rebuilds it from storage (``recovery rebuild``).
Prints the recovery time of each, its steps, and the recovery point; checks nothing (the drill probe
checks the promise). Destroys the stack at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

from lakehouse_platform.control import commands, isolated
from lakehouse_platform.control.procedures import stop_service
from lakehouse_platform.control.workspace import forget, outputs, pulumi_env
from lakehouse_platform.runtime.config import from_outputs, load_catalog
from tests.support import REPO_ROOT

STACK = "bench"


def cli(*args: str) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lakehouse_platform", *args, "--stack", STACK],
                          cwd=REPO_ROOT,
                          env={**os.environ, **pulumi_env(STACK)}, capture_output=True, text=True, timeout=1800,
                          check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout), seconds


def lose_catalog() -> float:
    """Stop the catalog, delete its database, start it again on an empty one: seconds."""
    out = outputs(STACK)
    config, _ = from_outputs(out)
    assert config.backups is not None
    started = time.perf_counter()
    stop_service(out, config.catalog.service)
    database = Path(config.backups.sqlite[0].path)
    for path in (database, Path(f"{database}-journal")):
        path.unlink(missing_ok=True)
    commands.up(STACK, quiet=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    isolated.isolated_stack(STACK)
    try:
        up_s = commands.up(STACK, quiet=True)
        config, creds = from_outputs(outputs(STACK))
        catalog = load_catalog(config, creds)
        catalog.create_namespace_if_not_exists("bench")
        from pyiceberg.schema import Schema
        from pyiceberg.types import LongType, NestedField

        schema = Schema(NestedField(1, "id", LongType(), required=False))
        tables = [catalog.create_table(f"bench.t{i}", schema=schema) for i in range(args.tables)]
        batch = pa.Table.from_pylist([{"id": i} for i in range(100)], schema=tables[0].schema().as_arrow())
        for table in tables:
            for _ in range(args.commits):
                table.append(batch)
        _, backup_s = cli("recovery", "backup")
        backed_up = time.time()
        for table in catalog.list_tables("bench"):
            catalog.load_table(table).append(batch)  # what the backup misses
        restores, rebuilds, points = [], [], []
        for _ in range(args.rounds):
            loss_s = lose_catalog()
            points.append(time.time() - backed_up)
            report, restore_s = cli("recovery", "restore")
            restores.append((restore_s, report["seconds"], len(report["rolled_forward"])))
            loss2_s = lose_catalog()
            report2, rebuild_s = cli("recovery", "rebuild")
            rebuilds.append((loss2_s + rebuild_s, report2["seconds"], report2["found_on_storage"]))
        load = os.getloadavg()[0]
        print(f"\nstack {STACK} up in {up_s:.1f} s; {args.tables} tables x {args.commits + 1} commits; "
              f"backup {backup_s:.1f} s (command wall time); load average {load:.1f}; loss took {loss_s:.1f} s")
        print(f"\n(a) restore from the latest backup + roll forward, per round (objective "
              f"{report['objectives']['rto_minutes']} min):")
        for wall, steps, rolled in restores:
            print(f"  recovery time {wall:.1f} s (command wall time): {steps}; tables rolled forward {rolled}")
        print(f"  median {statistics.median(r[0] for r in restores):.1f} s; recovery point of the backup alone "
              f"{statistics.median(points):.1f} s ({args.tables} commits), after rolling forward 0 commits lost")
        print("\n(b) rebuild from storage, no backup (catalog restart on an empty database + register):")
        for wall, steps, found in rebuilds:
            print(f"  recovery time {wall:.1f} s: {steps}; {found} tables found on storage")
        print(f"  median {statistics.median(r[0] for r in rebuilds):.1f} s; 0 commits lost")
    finally:
        commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)


if __name__ == "__main__":
    main()
