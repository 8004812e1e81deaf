"""Benchmark: the catalog's commit path, measured the same way every time (PyIceberg appends).

For each catalog backend in ``--backends``:

* ``platform``: the stack's own catalog, as clients reach it (through the catalog gate);
* ``sqlite``: a throwaway REST fixture on file-backed SQLite, started as the native target starts the
  stack's (same jar, launcher and table defaults; no gate in front);
* ``postgres``: the same fixture on the platform's PostgreSQL (database ``fixture``, a catalog name of
  the run's own, four pooled connections).

Each gets four runs, one table each:

1. **breakdown**: ``--breakdown`` single-writer commits through timing proxies in front of the store and
   the catalog: every request with its duration, the writer's CPU (the proxies run in processes of their
   own) and the catalog's time, per commit;
2. **one writer** for ``--seconds``: commits/s, p50/p99;
3. **growth**: ``--growth`` commits on one table: p50 of the first and the last 50, metadata.json's size,
   then the breakdown again on the aged table (where the growth goes);
4. **``--writers`` writers**, as processes (the figure is the catalog's, not one interpreter's), then as
   threads, with the backoff carried into the next commit and reset (``--backoff``), for ``--seconds``:
   commits/s, attempts per commit, p50/p99/max, 5xx, every acknowledged commit in the snapshot log and
   in the data once, and whether a writer starved (fewer commits than a quarter of the mean).

The writers are the platform's own (``lakehouse_platform.probes.support.commits.TableWriter``): a loaded table is
kept, a batch's data files are written once, a 409 refreshes and re-commits them after a full-jitter wait,
and a contended writer waits so again before its next commit.

Run (after ``make up``; the throwaway fixtures take free loopback ports):
    .venv/bin/python bench/bench_commits.py --stack native
    .venv/bin/python bench/bench_commits.py --stack native --backends sqlite,postgres --seconds 20
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import logging
import multiprocessing
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from timing_proxy import ProxyProcess, breakdown  # bench/, this script's directory: first on sys.path

from lakehouse_platform.probes.support import commits
from lakehouse_platform.probes.support.fixture import postgres_fixture, throwaway_fixture
from lakehouse_platform.probes.support.stack import Stack, read_outputs_file, read_stack_outputs

BACKENDS = ("platform", "sqlite", "postgres")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


# -- the catalogs ---------------------------------------------------------------------------------


@contextlib.contextmanager
def catalog_props(stack: Stack, backend: str) -> Iterator[dict[str, str]]:
    """The PyIceberg properties of one backend's catalog, which lives as long as the context."""
    props = dict(stack.pyiceberg_props())
    if backend == "platform":
        yield props
        return
    if backend == "sqlite":
        with throwaway_fixture(stack, "jdbc:sqlite:file:{work}/fixture.db", heap="-Xmx384m",
                               tag=f"bench-sqlite-{stack.run_id}") as fixture:
            yield {**props, "uri": fixture.uri}
        return
    with postgres_fixture(stack, f"bench-postgres-{stack.run_id}") as fixture:
        yield {**props, "uri": fixture.uri}


def fresh_table(props: dict[str, str], ident: str):
    catalog = _catalog(props)
    with contextlib.suppress(Exception):
        catalog.create_namespace(ident.rsplit(".", 1)[0])
    catalog.create_table(ident, commits.ProbeBatches().schema())
    return catalog


def drop(props: dict[str, str], ident: str) -> None:
    with contextlib.suppress(Exception):
        _catalog(props).purge_table(ident)


# -- the runs -------------------------------------------------------------------------------------


def run_breakdown(props: dict[str, str], ident: str, count: int, rows: int, label: str = "breakdown",
                  create: bool = True) -> None:
    """Single-writer commits through timing proxies: where one commit's time goes."""
    from pyiceberg.catalog import load_catalog

    if create:
        fresh_table(props, ident)
    s3_upstream = props["s3.endpoint"].split("//", 1)[1]
    catalog_upstream = props["uri"].split("//", 1)[1]
    with ProxyProcess("s3", s3_upstream) as s3, ProxyProcess("catalog", catalog_upstream) as cat:
        proxied = {**props, "s3.endpoint": f"http://{s3.address}", "uri": f"http://{cat.address}"}
        writer = commits.TableWriter(load_catalog("bench-breakdown", **proxied), ident)
        writer.append(commits.ProbeBatches().rows("breakdown", -1, rows))  # warm: the load, connections
        s3.reset()
        cat.reset()
        walls, cpus = [], []
        for seq in range(count):
            data = commits.ProbeBatches().rows("breakdown", seq, rows)
            wall, cpu = time.perf_counter(), time.process_time()  # every thread's: PyArrow writes in its pool
            writer.append(data)
            cpus.append(time.process_time() - cpu)
            walls.append(time.perf_counter() - wall)
        requests = s3.reset() + cat.reset()
    s3_ms = 1000 * sum(r.seconds for r in requests if r.target == "s3") / count
    cat_ms = 1000 * sum(r.seconds for r in requests if r.target == "catalog") / count
    commit_ms = 1000 * sum(r.seconds for r in requests if r.kind == "commit") / count
    wall_ms, cpu_ms = 1000 * statistics.fmean(walls), 1000 * statistics.fmean(cpus)
    print(f"  {label:13s}: {count} commits of {rows} rows, one writer, through timing proxies")
    print(f"    per commit : {wall_ms:.0f} ms wall (p50 {ms(commits.quantile(walls, 0.5))}) = store {s3_ms:.0f} ms "
          f"({sum(r.target == 's3' for r in requests) / count:.1f} requests) + catalog {cat_ms:.0f} ms "
          f"(of it the commit {commit_ms:.0f} ms) + writer CPU {cpu_ms:.0f} ms + other (proxy hops, waits) "
          f"{wall_ms - s3_ms - cat_ms - cpu_ms:.0f} ms")
    for kind, per_100, median, total in breakdown(requests, count):
        print(f"    {kind:28s} {per_100 / 100:5.2f} per commit, median {median:6.1f} ms, {total:6.1f} ms per commit")


def run_one_writer(props: dict[str, str], ident: str, seconds: float, rows: int) -> None:
    fresh_table(props, ident)
    outcome = commits.run(lambda: _catalog(props), ident, _appenders(1, seconds, rows), create=False)
    print(f"  one writer   : {outcome.summary()}; verified {outcome.verified}")
    _problems(outcome)


def run_growth(stack: Stack, props: dict[str, str], ident: str, count: int, rows: int) -> None:
    """``count`` commits on one table: does a commit get slower as the table ages?"""
    catalog = fresh_table(props, ident)
    writer = commits.TableWriter(_catalog(props), ident)
    sizes, latencies = [], []
    for seq in range(count):
        started = time.perf_counter()
        writer.append(commits.ProbeBatches().rows("growth", seq, rows))
        latencies.append(time.perf_counter() - started)
        if seq in (0, count - 1):
            sizes.append(_metadata_size(stack, catalog.load_table(ident).metadata_location))
    window = min(50, count // 2) or 1
    first, last = commits.quantile(latencies[:window], 0.5), commits.quantile(latencies[-window:], 0.5)
    print(f"  growth       : {count} commits on one table in {sum(latencies):.0f}s: p50 of the first {window} "
          f"{ms(first)}, of the last {window} {ms(last)} ({100 * (last / first - 1):+.0f}%); "
          f"p99 {ms(commits.quantile(latencies, 0.99))}; "
          f"metadata.json {sizes[0] / 1024:.1f} KiB -> {sizes[-1] / 1024:.1f} KiB")
    run_breakdown(props, ident, min(20, count), rows, label=f"aged {count}", create=False)


def run_writers(props: dict[str, str], ident: str, writers: int, seconds: float, rows: int, processes: bool,
                carry: bool) -> None:
    admin = fresh_table(props, ident)
    names = [f"append-{i}" for i in range(writers)]
    workload = dataclasses.replace(_appenders(writers, seconds, rows), carry_backoff=carry)
    if processes:
        outcome = _in_processes(props, ident, names, workload)
        commits.verify(admin, outcome)
    else:
        outcome = commits.run(lambda: _catalog(props), ident, workload, create=False)
    attempts = sum(c.attempts for c in outcome.commits) / max(len(outcome.commits), 1)
    starved = commits.starved(outcome, names)
    print(f"  {writers} {'processes' if processes else 'threads  '} ({'carried' if carry else 'reset'} backoff): "
          f"{outcome.summary()}, max {ms(outcome.latency(1.0))}, {attempts:.2f} attempts per commit")
    print(f"    per writer : {commits.per_writer(outcome)}; starved (< 1/4 of the mean): {starved or 'none'}")
    print(f"    verified   : {outcome.verified}")
    _problems(outcome)


def _in_processes(props: dict[str, str], ident: str, names: list[str], workload: commits.Workload) -> commits.Outcome:
    """One appender per process; they start together once every one of them has imported PyIceberg."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=len(names), mp_context=context) as pool:
        list(pool.map(_warm, range(len(names))))  # imports done in every worker before the clock starts
        start = time.time()
        jobs = [commits.AppenderJob(props=props, ident=ident, writer=name, deadline_epoch=start + workload.duration_s,
                                    workload=workload) for name in names]
        outcomes = list(pool.map(commits.run_appender_process, jobs))
    return commits.merge(ident, outcomes, time.time() - start)


def _warm(_: int) -> None:
    import pyiceberg.catalog.rest
    import pyiceberg.io.pyarrow  # noqa: F401

    time.sleep(0.5)  # keep this worker busy so every worker gets one warm-up


def _catalog(props: dict[str, str]):
    from pyiceberg.catalog import load_catalog

    return load_catalog("bench", **props)


def _appenders(writers: int, seconds: float, rows: int) -> commits.Workload:
    return commits.Workload(duration_s=seconds, stream=False, batch_commits=0, appenders=writers, appender_rows=rows,
                            appender_max_commits=10**6, max_attempts=200, commit_timeout_s=120)


def _metadata_size(stack: Stack, location: str) -> int:
    bucket, key = location.removeprefix("s3://").split("/", 1)
    return int(stack.s3().head_object(Bucket=bucket, Key=key)["ContentLength"])


def _problems(outcome: commits.Outcome) -> None:
    for problem in outcome.problems:
        print(f"    PROBLEM    : {problem}")
    for error in (outcome.errors + outcome.server_errors)[:3]:
        print(f"    error      : {error[:300]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="Pulumi stack (reads its outputs with the project's CLI)")
    source.add_argument("--outputs", type=Path, help="stack outputs JSON file")
    parser.add_argument("--backends", default=",".join(BACKENDS), help=f"comma-separated: {', '.join(BACKENDS)}")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rows", type=int, default=10, help="rows per commit")
    parser.add_argument("--breakdown", type=int, default=50, help="commits through the timing proxies")
    parser.add_argument("--growth", type=int, default=500, help="commits on one table (0: skip)")
    parser.add_argument("--backoff", choices=("carry", "reset", "both"), default="both",
                        help="the writers' backoff after a contended commit: carried into the next commit "
                             "(the platform's writers) or reset to none (the capture effect), or both in turn")
    args = parser.parse_args(argv)
    # A purge of a table whose old metadata.json files the catalog already deleted warns once per file.
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        parser.error(f"--backends: unknown {', '.join(unknown)}; allowed: {', '.join(BACKENDS)}")

    outputs = read_outputs_file(args.outputs) if args.outputs else read_stack_outputs(args.stack)
    stack = Stack(outputs=outputs, name=args.stack, run_id=time.strftime("%m%d%H%M%S"))
    namespace = f"bench_{stack.run_id}"
    for backend in backends:
        print(f"== {backend} ({stack.target} stack): {args.rows} rows per commit")
        with catalog_props(stack, backend) as props:
            print(f"  catalog      : {props['uri']}")
            runs = [("breakdown", lambda i: run_breakdown(props, i, args.breakdown, args.rows)),
                    ("one", lambda i: run_one_writer(props, i, args.seconds, args.rows))]
            if args.growth:
                runs.append(("growth", lambda i: run_growth(stack, props, i, args.growth, args.rows)))
            for carry in {"carry": (True,), "reset": (False,), "both": (True, False)}[args.backoff]:
                tag = "carry" if carry else "reset"
                runs += [(f"processes_{tag}", lambda i, c=carry: run_writers(props, i, args.writers, args.seconds,
                                                                            args.rows, True, c)),
                         (f"threads_{tag}", lambda i, c=carry: run_writers(props, i, args.writers, args.seconds,
                                                                          args.rows, False, c))]
            for name, run in runs:
                ident = f"{namespace}.{backend}_{name}"
                try:
                    run(ident)
                finally:
                    drop(props, ident)
            with contextlib.suppress(Exception):
                _catalog(props).drop_namespace(namespace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
