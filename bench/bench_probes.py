"""Benchmark: wall time of the whole post-deploy probe suite against a stack (target < 5 min on 2 cores).

The suite starts its own Spark (local[1]) and reaches Trino cold, so both are inside the figure. Extra
arguments go to pytest (e.g. ``--restart-command ...``). Prints the wall time, the per-probe times
from the JUnit XML and the suite's result.

Run:
    .venv/bin/python bench/bench_probes.py --stack native
    .venv/bin/python bench/bench_probes.py --outputs outputs.json -- --restart-command "..."
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 300


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack")
    source.add_argument("--outputs")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        junit = Path(work) / "probes.xml"
        command = [sys.executable, "-m", "pytest", "lakehouse_platform/probes", "-q",
                   *(["--stack", args.stack] if args.stack else ["--outputs", args.outputs]),
                   f"--junitxml={junit}", *args.pytest_args]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - started
        cases = []
        if junit.exists():
            for case in ET.parse(junit).iter("testcase"):  # noqa: S314 - our own pytest's JUnit file
                result = "failed" if case.find("failure") is not None or case.find("error") is not None else (
                    "skipped" if case.find("skipped") is not None else "passed")
                cases.append((case.get("name"), float(case.get("time", 0)), result))
    for name, seconds, result in cases:
        print(f"  {seconds:6.1f} s  {result:7}  {name}")
    passed = sum(r == "passed" for _, _, r in cases)
    print(f"probe suite wall time: {wall:.1f} s ({passed}/{len(cases)} passed, pytest exit {done.returncode}; "
          f"target < {TARGET_S} s on 2 cores: {'met' if wall < TARGET_S else 'MISSED'})")
    if done.returncode not in (0, 1):
        print(done.stdout[-3000:], done.stderr[-3000:])
    return 0 if wall < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
