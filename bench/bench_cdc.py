"""Benchmark: CDC latency, PostgreSQL commit -> the row visible in the sink's Iceberg table, p50/p99.

Run: .venv/bin/python bench/bench_cdc.py --stack native [--changes 200 --rate 10]
     .venv/bin/python bench/bench_cdc.py               (deploys the isolated `bench` stack, measures, destroys it)

Makes ``--changes`` inserts, updates and deletes in the bookshop's PostgreSQL at ``--rate`` per
second (one transaction each), after one warm-up change (an idle sink's first commit waits out one
commit timeout). Latency per change = the commit timestamp of the first Iceberg snapshot holding its
event - the PostgreSQL commit time (clock_timestamp()); the poller's own observation adds 0.1-0.3 s.
Expected at a commit interval I: p50 about I/2 plus the commit's own work, p99 about I plus it.
Bounded: the changes take changes/rate seconds, then at most the stack's cdc_visible_within_s.
No assertion: it prints figures (and checks, as the probe does, that exactly the events arrived).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from lakehouse_platform.control import commands, isolated
from lakehouse_platform.control.workspace import forget, outputs
from lakehouse_platform.probes.support import cdc
from lakehouse_platform.probes.support.stack import Stack

STACK = "bench"


def measure(stack_name: str, changes: int, rate: float) -> dict:
    stack = Stack(outputs=outputs(stack_name), name=stack_name, run_id=time.strftime("%H%M%S") + "b")
    pipe = cdc.pipeline(stack)
    ok, evidence = cdc.wait_converged(stack, pipe, 300)
    if not ok:
        raise SystemExit(f"the sink's table never agreed with PostgreSQL: {evidence}")
    bound = pipe.visible_within_s + pipe.sink["commit_timeout_s"]
    cdc.exercise(stack, pipe, 1, 1.0, bound, seed=1)  # warm-up
    run = cdc.exercise(stack, pipe, changes, rate, pipe.visible_within_s, seed=int(time.time()) % 10_000)
    return {"stack": stack_name, "commit_interval_s": pipe.sink["commit_interval_s"],
            "commit_timeout_s": pipe.sink["commit_timeout_s"], "load_average": os.getloadavg(), **run.result}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stack", help="a deployed stack (default: deploy the isolated bench stack)")
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--rate", type=float, default=10.0)
    args = parser.parse_args()
    deployed = args.stack is None
    name = args.stack or STACK
    if deployed:
        isolated.isolated_stack(STACK)
        print(f"bring-up of {STACK}: {commands.up(STACK, quiet=True):.1f} s")
    try:
        result = measure(name, args.changes, args.rate)
    finally:
        if deployed:
            commands.down(STACK, quiet=True)
            forget(STACK)
            isolated.remove_stack_file(STACK)
    lat = result["latency_s"]
    print(json.dumps(result, indent=1, default=str))
    print(f"\nCDC latency, PostgreSQL commit -> snapshot ({result['changes']} changes at {args.rate:g}/s, commit "
          f"interval {result['commit_interval_s']} s): p50 {lat['p50']} s, p99 {lat['p99']} s, max {lat['max']} s; "
          f"exactly the events: {result['exactly_the_events']}, last state equal: {result['last_state_equal']}; "
          f"load average {result['load_average'][0]:.1f}")


if __name__ == "__main__":
    main()
