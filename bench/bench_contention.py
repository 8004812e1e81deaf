"""Benchmark: contention. One writer, N writers on N tables and N writers on one table, side by side in one run,
against a deployed stack (its catalog as clients reach it: through the gate, the streams running beside), and where
the platform's CPU per commit goes.

Each phase runs ``--seconds`` with the platform's writers (``lakehouse_platform.probes.support.commits``: PyIceberg
appends of ``--rows`` rows, a loaded table kept, a batch's files written once, a 409 refreshed and re-committed after
a full-jitter wait, the backoff carried into the next commit), one per process:

1. one writer on one table;
2. ``--writers`` writers, each on a table of its own;
3. ``--writers`` writers on one table.

It prints commits/s (and the ratio to one writer), p50/p99, attempts per commit, 409s, 5xx, whether every
acknowledged commit is in its table, starved writers; and for each phase the CPU seconds per commit of the writers
and of each service of the stack (psutil: user + system time of each process tree over the phase), with the whole
machine's beside (other work on the host shows there). ``--profile`` then runs ``--profile-commits`` commits in
this process under cProfile and prints where the writer's CPU goes.

Run (a deployed stack: ``make up``, or an isolated one):
    .venv/bin/python bench/bench_contention.py --stack native [--writers 8] [--seconds 30] [--profile]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import cProfile
import io
import logging
import multiprocessing
import os
import pstats
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from lakehouse_platform.probes.support import commits
from lakehouse_platform.probes.support.stack import Stack, read_outputs_file, read_stack_outputs


@dataclass
class Phase:
    name: str
    outcome: commits.Outcome
    attempts: float
    verified: bool
    starved: list[str]
    cpu: dict[str, float]  # component -> CPU seconds over the phase
    machine_cpu: float  # the whole host's busy CPU seconds over the phase


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children so far (0 if it is gone)."""
    try:
        proc = psutil.Process(pid)
        total = 0.0
        for p in (proc, *proc.children(recursive=True)):
            with contextlib.suppress(psutil.Error):
                times = p.cpu_times()
                total += times.user + times.system
        return total
    except psutil.Error:
        return 0.0


def machine_busy() -> float:
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def service_pids(stack: Stack) -> dict[str, int]:
    """Each native service's watchdog pid (its process tree is the service), or nothing for other targets."""
    return {name: int(info["pid"]) for name, info in (stack.outputs.get("native") or {}).get("services", {}).items()
            if info.get("pid")}


def catalog(props: dict[str, str], name: str = "bench"):
    from pyiceberg.catalog import load_catalog

    return load_catalog(name, **props)


def fresh(props: dict[str, str], ident: str) -> None:
    admin = catalog(props)
    with contextlib.suppress(Exception):
        admin.create_namespace(ident.rsplit(".", 1)[0])
    admin.create_table(ident, commits.ProbeBatches().schema())


def warm(_: int) -> int:
    import pyiceberg.catalog.rest
    import pyiceberg.io.pyarrow  # noqa: F401

    time.sleep(0.5)  # keep this worker busy so every worker gets one warm-up
    return os.getpid()


def run_phase(name: str, pool: concurrent.futures.ProcessPoolExecutor, workers: list[int], props: dict[str, str],
              idents: list[str], seconds: float, rows: int, services: dict[str, int],
              retry_cap_s: float = commits.RETRY_CAP_S) -> Phase:
    """``len(idents)`` appenders (one per process), appender i on ``idents[i]``, for ``seconds``; a 409 waits a
    full-jitter backoff capped at ``retry_cap_s``."""
    for ident in dict.fromkeys(idents):
        fresh(props, ident)
    workload = commits.Workload(duration_s=seconds, stream=False, batch_commits=0, appenders=len(idents),
                                appender_rows=rows, appender_max_commits=10**6, max_attempts=200,
                                commit_timeout_s=120, retry_cap_s=retry_cap_s)
    before = {"writers": sum(cpu_seconds(pid) for pid in workers),
              **{service: cpu_seconds(pid) for service, pid in services.items()}}
    busy = machine_busy()
    start = time.time()
    jobs = [commits.AppenderJob(props=props, ident=ident, writer=f"append-{i}", deadline_epoch=start + seconds,
                                workload=workload) for i, ident in enumerate(idents)]
    outcomes = list(pool.map(commits.run_appender_process, jobs))
    elapsed = time.time() - start
    cpu = {"writers": sum(cpu_seconds(pid) for pid in workers) - before["writers"],
           **{service: cpu_seconds(pid) - before[service] for service, pid in services.items()}}
    machine = machine_busy() - busy
    admin = catalog(props)
    verified = True
    for ident in dict.fromkeys(idents):  # each table's own acknowledged commits are in it, once
        mine = commits.merge(ident, [o for o, i in zip(outcomes, idents, strict=True) if i == ident], elapsed)
        commits.verify(admin, mine)
        verified = verified and not mine.problems
    merged = commits.merge(idents[0] if len(set(idents)) == 1 else f"{len(set(idents))} tables", outcomes, elapsed)
    attempts = sum(c.attempts for c in merged.commits) / max(len(merged.commits), 1)
    names = [job.writer for job in jobs]
    return Phase(name, merged, attempts, verified, commits.starved(merged, names), cpu, machine)


def profile(props: dict[str, str], ident: str, count: int, rows: int, aged: int) -> None:
    """``count`` single-writer commits under cProfile, in this process, on a table with ``aged`` snapshots: where
    the writer's CPU goes."""
    fresh(props, ident)
    writer = commits.TableWriter(catalog(props, "bench-profile"), ident)
    for seq in range(max(aged, 1)):  # warm (the load, connections), and the table's history
        writer.append(commits.ProbeBatches().rows("profile", -1 - seq, rows))
    profiler = cProfile.Profile()
    cpu, wall = time.process_time(), time.perf_counter()
    profiler.enable()
    for seq in range(count):
        writer.append(commits.ProbeBatches().rows("profile", seq, rows))
    profiler.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"\n-- the writer under cProfile: {count} commits on a table of {aged}+ snapshots, {1000 * wall / count:.0f} "
          f"ms wall and {1000 * cpu / count:.0f} ms CPU each (this process's threads)")
    stats = pstats.Stats(profiler, stream=(text := io.StringIO()))
    stats.sort_stats("tottime").print_stats(18)
    print("\n".join(line for line in text.getvalue().splitlines()[6:] if line.strip()))
    by_package: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        package = next((p for p in ("pyiceberg", "pyarrow", "pydantic", "requests", "urllib3", "fsspec", "s3fs",
                                    "botocore", "json", "ssl", "socket", "http", "avro", "fastavro")
                        if f"/{p}/" in filename or filename.endswith(f"{p}.py")), "other")
        by_package[package] = by_package.get(package, 0.0) + tottime
    print("  own time by package: " + ", ".join(f"{k} {1000 * v / count:.1f} ms" for k, v in
                                                 sorted(by_package.items(), key=lambda kv: -kv[1])) + " per commit")


def print_phase(phase: Phase, baseline: float | None) -> None:
    outcome = phase.outcome
    rate = len(outcome.commits) / max(outcome.seconds, 1e-9)
    ratio = f" ({rate / baseline:.2f}x one writer)" if baseline else ""
    print(f"  {phase.name:24s} {rate:6.1f} commits/s{ratio}; p50 {outcome.latency(0.5) * 1000:.0f} ms, p99 "
          f"{outcome.latency(0.99) * 1000:.0f} ms, max {outcome.latency(1.0) * 1000:.0f} ms; "
          f"{phase.attempts:.2f} attempts/commit (max {max((c.attempts for c in outcome.commits), default=0)}), "
          f"{outcome.conflicts} 409s, {outcome.five_xx} 5xx; "
          f"all acknowledged commits present: {phase.verified}; starved: {phase.starved or 'none'}")
    count = max(len(outcome.commits), 1)
    parts = sorted(phase.cpu.items(), key=lambda kv: -kv[1])
    accounted = sum(phase.cpu.values())
    print(f"  {'':24s} CPU per commit: " + ", ".join(f"{name} {1000 * s / count:.0f} ms" for name, s in parts
                                                       if s / count >= 0.001)
          + f"; whole host {1000 * phase.machine_cpu / count:.0f} ms (of it not the stack's or the writers': "
            f"{1000 * max(phase.machine_cpu - accounted, 0) / count:.0f} ms)")
    for problem in outcome.problems[:3]:
        print(f"  {'':24s} PROBLEM: {problem}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="Pulumi stack (reads its outputs with the project's CLI)")
    source.add_argument("--outputs", type=Path, help="stack outputs JSON file")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rows", type=int, default=10, help="rows per commit")
    parser.add_argument("--shared-retry-caps", default="",
                        help="then the shared table again with each of these retry caps (seconds, comma-separated; "
                             f"the writers' own: {commits.RETRY_CAP_S:g})")
    parser.add_argument("--profile", action="store_true", help="then profile the writer in this process")
    parser.add_argument("--profile-commits", type=int, default=100)
    parser.add_argument("--profile-aged", type=int, default=0, help="snapshots the profiled table has first")
    args = parser.parse_args(argv)
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    outputs = read_outputs_file(args.outputs) if args.outputs else read_stack_outputs(args.stack)
    stack = Stack(outputs=outputs, name=args.stack, run_id=time.strftime("%m%d%H%M%S"))
    props = dict(stack.pyiceberg_props())
    namespace = f"contention_{stack.run_id}"
    services = service_pids(stack)
    print(f"== contention on {stack.name or args.outputs} ({stack.target}): {args.writers} writers, "
          f"{args.seconds:.0f} s a phase, {args.rows} rows a commit; load average {os.getloadavg()[0]:.1f} "
          f"({psutil.cpu_count()} CPUs)")
    context = multiprocessing.get_context("spawn")
    tables: list[str] = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.writers, mp_context=context) as pool:
        workers = sorted(set(pool.map(warm, range(args.writers))))
        phases = []
        caps = [float(c) for c in args.shared_retry_caps.split(",")] if args.shared_retry_caps else []
        for name, idents, cap in (
                ("1 writer, 1 table", [f"{namespace}.one"], commits.RETRY_CAP_S),
                (f"{args.writers} writers, {args.writers} tables",
                 [f"{namespace}.own_{i}" for i in range(args.writers)], commits.RETRY_CAP_S),
                (f"{args.writers} writers, 1 table", [f"{namespace}.shared"] * args.writers, commits.RETRY_CAP_S),
                *((f"{args.writers} writers, 1 table, cap {cap:g} s", [f"{namespace}.shared_{i}"] * args.writers, cap)
                  for i, cap in enumerate(caps))):
            tables += list(dict.fromkeys(idents))
            phases.append(run_phase(name, pool, workers, props, idents, args.seconds, args.rows, services, cap))
            print_phase(phases[-1], None if len(phases) == 1 else
                        len(phases[0].outcome.commits) / max(phases[0].outcome.seconds, 1e-9))
            sys.stdout.flush()
    try:
        if args.profile:
            tables.append(f"{namespace}.profile")
            profile(props, tables[-1], args.profile_commits, args.rows, args.profile_aged)
    finally:
        admin = catalog(props)
        for ident in tables:
            with contextlib.suppress(Exception):
                admin.purge_table(ident)
        with contextlib.suppress(Exception):
            admin.drop_namespace(namespace)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
