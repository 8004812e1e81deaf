"""Benchmark: the catalog's commit throughput with 8 concurrent writers (PyIceberg appends).

Eight threads, each with its own REST client, append small batches to one table back to back for
``--seconds``; a 409 (CommitFailedException) is retried with jittered backoff. Prints commits/s,
conflicts, retries, 5xx and p50/p99 commit latency (from the first attempt to the acknowledged commit),
then verifies the table (every acknowledged snapshot in the log, exact row count) and purges it.

Run (after `make up`, or against any outputs file):
    .venv/bin/python bench/bench_commits.py --stack native
    .venv/bin/python bench/bench_commits.py --outputs outputs.json --seconds 30 --writers 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from platform_tests.support import commits
from platform_tests.support.stack import Stack, read_outputs_file, read_stack_outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="Pulumi stack (reads its outputs with the project's CLI)")
    source.add_argument("--outputs", type=Path, help="stack outputs JSON file")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rows", type=int, default=10, help="rows per commit")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark table")
    args = parser.parse_args(argv)

    outputs = read_outputs_file(args.outputs) if args.outputs else read_stack_outputs(args.stack)
    stack = Stack(outputs=outputs, name=args.stack, run_id=time.strftime("%m%d%H%M%S"))
    ident = f"bench_{stack.run_id}.commits"
    workload = commits.Workload(duration_s=args.seconds, stream=False, batch_commits=0, appenders=args.writers,
                                appender_rows=args.rows, appender_max_commits=10**6, max_attempts=200,
                                commit_timeout_s=120)
    print(f"catalog {stack.host_profiles.get('pyiceberg', {}).get('uri')} ({stack.target}): {args.writers} writers, "
          f"{args.seconds:.0f}s, {args.rows} rows per commit")
    outcome = commits.run(lambda: stack.catalog(), ident, workload)
    attempts = sum(c.attempts for c in outcome.commits)
    per_writer = {}
    for c in outcome.commits:
        per_writer[c.writer] = per_writer.get(c.writer, 0) + 1
    print(f"commits      : {len(outcome.commits)} acknowledged in {outcome.seconds:.1f}s "
          f"= {len(outcome.commits) / outcome.seconds:.2f} commits/s")
    print(f"conflicts    : {outcome.conflicts} (HTTP 409), retries {outcome.retries}, "
          f"{attempts / max(len(outcome.commits), 1):.2f} attempts per commit")
    print(f"latency      : p50 {outcome.latency(0.5) * 1000:.0f} ms, p99 {outcome.latency(0.99) * 1000:.0f} ms, "
          f"max {outcome.latency(1.0) * 1000:.0f} ms")
    print(f"HTTP statuses: {dict(sorted(outcome.statuses.items()))} ({outcome.five_xx} 5xx)")
    print(f"per writer   : {dict(sorted(per_writer.items()))}")
    print(f"verified     : {outcome.verified}")
    for problem in outcome.problems:
        print(f"PROBLEM      : {problem}")
    for error in outcome.errors[:3]:
        print(f"error        : {error[:300]}")
    if not args.keep:
        try:
            catalog = stack.catalog()
            catalog.purge_table(ident)
            catalog.drop_namespace(ident.rsplit(".", 1)[0])
        except Exception as exc:  # noqa: BLE001
            print(f"(cleanup: {exc})")
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
