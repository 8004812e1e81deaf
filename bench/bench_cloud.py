"""How long the cloud program takes to evaluate under Pulumi mocks (target: under 5 s).

    .venv/bin/python bench/bench_cloud.py [--repeat N]

Each run evaluates the whole program for the cloud stack (Pulumi.cloud.yaml's lakehouse:platform):
spec validation, the seven layers, every resource the aws target registers, the stack outputs.
The first run also pays for importing pulumi_aws; it is reported apart, and the median is taken
over ``--repeat`` (default 5) runs after it. Exits 1 if the median is 5 s or more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

from lakehouse_platform.config import CONFIG_KEY, read_stack_config
from tests.support.harness import run_program  # the unit tier's mocks harness

ROOT = Path(__file__).resolve().parents[1]

TARGET_S = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (default 5)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)  # pulumi_aws's own deprecated aliases, on import
    platform = read_stack_config(ROOT / "Pulumi.cloud.yaml")[CONFIG_KEY]

    start = time.perf_counter()
    run = run_program("cloud", platform)
    first = time.perf_counter() - start
    timings = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        run = run_program("cloud", platform)
        timings.append(time.perf_counter() - start)
    median = statistics.median(timings)
    print(f"cloud program under mocks: {len(run.resources)} resources registered")
    print(f"  first run (imports pulumi_aws): {first:.2f} s")
    print(f"  runs: {', '.join(f'{t:.2f}' for t in timings)} s")
    print(f"  median of {args.repeat}: {median:.2f} s (target < {TARGET_S:.0f} s) "
          f"{'OK' if median < TARGET_S else 'TOO SLOW'}")
    return 0 if median < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
