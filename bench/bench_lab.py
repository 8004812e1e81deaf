"""Benchmark: time to evaluate the lab program under mocks and to render the ownership review.

Run: .venv/bin/python bench/bench_lab.py   (target: under 3 s each on 2 cores)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNS = 5


def time_program() -> list[float]:
    """Each run is a fresh interpreter, so imports (pulumi, pulumi_docker, pydantic) are counted."""
    code = (
        "import time; t=time.perf_counter();"
        "from tests.support.stacks import stack_platform; from tests.support.harness import run_program;"
        "r=run_program('lab', stack_platform('lab')); assert len(r.resources)>30;"
        "print(time.perf_counter()-t)"
    )
    return [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(RUNS)]


def time_review() -> list[float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "lakehouse_platform", "review", "--stack", "lab"], cwd=ROOT,
                       capture_output=True,
                       check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    program, review = time_program(), time_review()
    print(f"lab program under mocks : median {statistics.median(program):.2f} s, max {max(program):.2f} s "
          f"over {RUNS} runs (target < 3 s)")
    print(f"ownership review (lab)  : median {statistics.median(review):.2f} s, max {max(review):.2f} s "
          f"over {RUNS} runs (target < 3 s)")


if __name__ == "__main__":
    main()
