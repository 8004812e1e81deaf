"""Benchmark: native bring-up from a warm cache to all services healthy, and resident memory.

Run: .venv/bin/python bench/bench_native.py   (targets: bring-up <= 60 s warm, every connector RUNNING;
     the whole native platform <= 3.5 GB RSS)

Deploys an isolated copy of the native stack (``bench``: its own block of ports and a fresh state
directory, so it never meets a user's own platform), measures, then destroys it. ``pulumi up`` returns once
every process is healthy and every connector is RUNNING (the connector resources wait for it); the
streams check below says so from Connect itself. Resident memory is summed over each service's process
tree (psutil), right after bring-up, like the chapter's table.
"""

from __future__ import annotations

import psutil

from infra.config import load_stack
from infra.stack import commands, isolated
from infra.stack.workspace import forget, outputs

STACK = "bench"


def rss_of(pid: int) -> int:
    """Resident bytes of a process and its children."""
    try:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in (proc, *proc.children(recursive=True)))
    except psutil.Error:
        return 0


def main() -> None:
    isolated.isolated_stack(STACK)
    spec = load_stack("native")
    try:
        seconds = commands.up(STACK, quiet=True)
        out = outputs(STACK)
        print(f"\nbring-up (warm cache, fresh data, pulumi up until every service is healthy and every connector "
              f"RUNNING): {seconds:.1f} s (target <= 60 s)")
        for _layer, check, ok, detail in commands.smoke_streams(out):
            print(f"  {'ok' if ok else 'FAILED'}: {check}: {detail}")
        print(f"\n{'service':<14} {'version':<10} {'resident':>10} {'budget':>10}")
        total = 0
        for name, info in out["native"]["services"].items():
            rss = rss_of(info["pid"])
            total += rss
            version = out["native"]["obtained_versions"].get(name, spec.pin_of(name))
            print(f"{name:<14} {version:<10} {rss / 1e6:>8.0f} MB {spec.services[name].memory:>10}")
        print(f"{'total':<25} {total / 1e6:>8.0f} MB   (target: the whole native platform <= 3.5 GB)")
    finally:
        commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)


if __name__ == "__main__":
    main()
