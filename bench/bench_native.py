"""Benchmark: native bring-up from a warm cache to all services healthy, and resident memory.

Run: .venv/bin/python bench/bench_native.py   (targets: bring-up < 90 s with Trino; core < 3 GB RSS)

Deploys a throwaway copy of the native stack on ports +22000 (so it never meets a developer's own
platform), with a fresh state directory, measures, then destroys it. Resident memory is summed
over each service's process tree (psutil), right after bring-up, like the chapter's table.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infra.spec.loader import state_root  # noqa: E402

from infra.spec import load_stack  # noqa: E402
from infra.targets.native import stack as native_stack  # noqa: E402

STACK, OFFSET = "bench", 22000


def rss_of(pid: int) -> int:
    """Resident bytes of a process and its children."""
    try:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in (proc, *proc.children(recursive=True)))
    except psutil.Error:
        return 0


def main() -> None:
    native_stack.write_offset_stack(STACK, OFFSET)
    shutil.rmtree(state_root() / STACK, ignore_errors=True)
    spec = load_stack("native")
    try:
        seconds = native_stack.up(STACK, quiet=True)
        outputs = native_stack.outputs(STACK)
        print(f"\nbring-up (warm cache, fresh data, pulumi up until every service is healthy): {seconds:.1f} s "
              f"(target < 90 s)")
        print(f"\n{'service':<14} {'version':<10} {'resident':>10} {'budget':>10}")
        total = 0
        for name, info in outputs["native"]["services"].items():
            rss = rss_of(info["pid"])
            total += rss
            version = outputs["native"]["obtained_versions"].get(name, spec.pin_of(name))
            print(f"{name:<14} {version:<10} {rss / 1e6:>8.0f} MB {spec.services[name].memory:>10}")
        print(f"{'total':<25} {total / 1e6:>8.0f} MB   (target: native core < 3 GB)")
    finally:
        native_stack.down(STACK, quiet=True)
        native_stack.remove_stack(STACK)


if __name__ == "__main__":
    main()
