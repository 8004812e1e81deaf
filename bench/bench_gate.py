"""Benchmark: what the catalog gate adds to each request, gate and catalog side by side in one run.

Starts a REST fixture (the native stack's build, on a SQLite file and a ``file://`` warehouse of its own)
and a catalog gate in front of it, on ports of the ``bench-gate`` block (``LAKEHOUSE_PORT_BASE``), makes
one table with a few snapshots (a real load-table answer, some kilobytes), then measures each path,
directly against the fixture and through the gate:

1. **reused connection**: ``--requests`` ``GET /v1/config`` and as many load-table calls, one after the
   other on one keep-alive connection (a ``requests`` session, as PyIceberg's): median and p99;
2. **concurrent**: ``--bursts`` bursts of ``--concurrency`` load-table calls at once, each on a connection
   of its own (every client connects in the same instant): p50, p99 and max of each call (connect
   included), errors, and the host's listen-queue overflows during the bursts (``TcpExtListenOverflows``
   and ``TcpExtListenDrops`` of ``/proc/net/netstat``, read before and after: system-wide counters, so
   anything else on the host that overflows its own queue counts too).

Goals (issue 20): the gate adds under 2 ms at the median on a reused connection; under a burst its p99 is
within twice the catalog's and no listen queue overflows.

Run (after ``make artifacts``; both processes are stopped at the end)::

    .venv/bin/python bench/bench_gate.py
    .venv/bin/python bench/bench_gate.py --gate-script /path/to/another/catalog_gate.py   # another build
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import requests

from lakehouse_platform.control.isolated import first_port_of
from lakehouse_platform.paths import state_root
from lakehouse_platform.probes.support import gate as support_gate

TOKEN = "bench-writer-token"  # noqa: S105 - a throwaway identity of the benchmark's own gate
NAMESPACE, TABLE = "bench", "orders"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def netstat() -> dict[str, int]:
    """TcpExt counters of /proc/net/netstat (system-wide)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    counters: dict[str, int] = {}
    for names, values in zip(lines[::2], lines[1::2], strict=True):
        prefix = names.split(":", 1)[0]
        for name, value in zip(names.split()[1:], values.split()[1:], strict=True):
            counters[f"{prefix}{name}"] = int(value)
    return counters


# -- the measurements ---------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def session() -> requests.Session:
    opened = requests.Session()
    opened.headers["Authorization"] = f"Bearer {TOKEN}"
    return opened


def reused(urls: dict[str, str], count: int, block: int = 1) -> dict[str, list[float]]:
    """``count`` GETs per side, each side on one keep-alive connection, the sides taking turns (request by
    request: a change of the host's load hits both alike); seconds each, after a warm-up."""
    sessions = {side: session() for side in urls}
    for side, url in urls.items():
        for _ in range(20):
            sessions[side].get(url, timeout=30).raise_for_status()
    times: dict[str, list[float]] = {side: [] for side in urls}
    for done in range(0, count, block):
        for side, url in urls.items():
            for _ in range(min(block, count - done)):
                started = time.perf_counter()
                response = sessions[side].get(url, timeout=30)
                response.content  # noqa: B018 - read the whole answer
                times[side].append(time.perf_counter() - started)
                response.raise_for_status()
    for opened in sessions.values():
        opened.close()
    return times


@dataclass
class Burst:
    times: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    overflows: int = 0
    drops: int = 0


def bursts(urls: dict[str, str], concurrency: int, count: int, timeout_s: float) -> dict[str, Burst]:
    """``count`` bursts per side, taking turns: ``concurrency`` clients, each on a new connection, released
    at once; the listen-queue counters read around each burst."""
    results = {side: Burst() for side in urls}
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for _ in range(count):
            for side, url in urls.items():
                result = results[side]
                barrier = threading.Barrier(concurrency)

                def one(url: str = url, barrier: threading.Barrier = barrier) -> float:
                    barrier.wait()
                    began = time.perf_counter()
                    with requests.Session() as opened:  # a connection of its own
                        response = opened.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=timeout_s)
                        response.raise_for_status()
                    return time.perf_counter() - began

                before = netstat()
                for future in [pool.submit(one) for _ in range(concurrency)]:
                    try:
                        result.times.append(future.result())
                    except Exception as exc:  # noqa: BLE001 - every failure is a figure
                        result.errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
                after = netstat()
                result.overflows += after.get("TcpExtListenOverflows", 0) - before.get("TcpExtListenOverflows", 0)
                result.drops += after.get("TcpExtListenDrops", 0) - before.get("TcpExtListenDrops", 0)
                time.sleep(1.0)  # let the queues and the catalog settle between bursts
    return results


# -- the table -------------------------------------------------------------------------------------------


def make_table(uri: str, snapshots: int) -> None:
    """``bench.orders`` with ``snapshots`` appends (its load-table answer carries them)."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("bench-gate", type="rest", uri=uri, token=TOKEN)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("note", pa.string())])
    catalog.create_namespace(NAMESPACE)
    table = catalog.create_table(f"{NAMESPACE}.{TABLE}", schema)
    for batch in range(snapshots):
        table.append(pa.table({"id": list(range(batch * 10, batch * 10 + 10)), "note": ["x"] * 10}, schema=schema))


# -- the run ---------------------------------------------------------------------------------------------


@dataclass
class Figures:
    config: dict[str, list[float]]
    load: dict[str, list[float]]
    burst: dict[str, Burst]
    gate_cpu_ms: float  # the gate process's CPU per request on a reused connection


def measure(direct: str, gate: str, gate_pid: int, args: argparse.Namespace) -> Figures:
    table = f"/v1/namespaces/{NAMESPACE}/tables/{TABLE}"
    size = len(requests.get(direct + table, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30).content)
    print(f"  {args.requests} x /v1/config and {args.requests} x load-table ({size} bytes) per side on one "
          f"connection; {args.bursts} bursts of {args.concurrency} load-table calls per side", flush=True)
    cpu = cpu_seconds(gate_pid)
    config = reused({"direct": direct + "/v1/config", "gate": gate + "/v1/config"}, args.requests)
    load = reused({"direct": direct + table, "gate": gate + table}, args.requests)
    gate_cpu_ms = 1000 * (cpu_seconds(gate_pid) - cpu) / (2 * (args.requests + 20))
    burst = bursts({"direct": direct + table, "gate": gate + table}, args.concurrency, args.bursts, args.timeout)
    return Figures(config, load, burst, gate_cpu_ms)


def report(figures: Figures) -> None:
    sides = ("direct", "gate")
    print()
    print(f"  {'':44s}" + "".join(f"{side:>12s}" for side in sides) + f"{'gate adds':>12s}")

    def row(label: str, values: list[float], unit: str = "ms") -> None:
        added = values[1] - values[0]
        if unit == "ms":
            cells = "".join(f"{v * 1000:12.2f}" for v in values) + f"{added * 1000:12.2f}"
        else:
            cells = "".join(f"{v:12.0f}" for v in values) + f"{added:12.0f}"
        print(f"  {label:44s}{cells}")

    for label, times in (("GET /v1/config, reused connection", figures.config),
                         ("load-table, reused connection", figures.load)):
        row(f"{label}: median (ms)", [statistics.median(times[side]) for side in sides])
        row(f"{label}: p99 (ms)", [quantile(times[side], 0.99) for side in sides])
        paired = statistics.median(g - d for d, g in zip(times["direct"], times["gate"], strict=True))
        print(f"  {label + ': median of paired differences':80s}{paired * 1000:12.2f}")
    burst = figures.burst
    for q, name in ((0.5, "p50"), (0.99, "p99"), (1.0, "max")):
        row(f"concurrent load-table: {name} (ms)", [quantile(burst[side].times, q) if burst[side].times else
                                                     float("nan") for side in sides])
    row("concurrent: calls answered", [len(burst[side].times) for side in sides], "n")
    row("concurrent: errors", [len(burst[side].errors) for side in sides], "n")
    row("concurrent: TcpExtListenOverflows (delta)", [burst[side].overflows for side in sides], "n")
    row("concurrent: TcpExtListenDrops (delta)", [burst[side].drops for side in sides], "n")
    print(f"  the gate's own CPU per request (reused connection): {figures.gate_cpu_ms:.2f} ms")
    for side in sides:
        for error in sorted(set(burst[side].errors))[:3]:
            print(f"    {side} error: {error}")
    added = statistics.median(figures.load["gate"]) - statistics.median(figures.load["direct"])
    ratio = quantile(burst["gate"].times or [float("inf")], 0.99) / quantile(burst["direct"].times, 0.99)
    print()
    print(f"  goal: the gate adds < 2 ms at the median (load-table): {added * 1000:.2f} ms -> "
          f"{'met' if added < 0.002 else 'NOT met'}")
    print(f"  goal: concurrent p99 within 2x of direct: {ratio:.2f}x -> {'met' if ratio <= 2 else 'NOT met'}; "
          f"listen-queue overflows during the gate's bursts: {burst['gate'].overflows}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=500, help="requests of each kind on a reused connection")
    parser.add_argument("--concurrency", type=int, default=100, help="load-table calls at once in a burst")
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds a call may take (then: failed)")
    parser.add_argument("--snapshots", type=int, default=5, help="appends to the benchmark's table")
    parser.add_argument("--gate-script", type=Path,
                        help="run this gate file instead of lakehouse_platform.runtime.catalog_gate")
    args = parser.parse_args(argv)

    runtime = support_gate.fixture_runtime()
    if runtime is None:
        print("no REST fixture build in the artifact cache: run `make artifacts` first", file=sys.stderr)
        return 1
    first = first_port_of("bench-gate")
    fixture_port, gate_port = first, first + 1
    print(f"== catalog gate benchmark: fixture on 127.0.0.1:{fixture_port}, gate on 127.0.0.1:{gate_port}; "
          f"host load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    config = {"listen_port": gate_port, "identities": [
        {"name": "writer", "role": "writer", "token_sha256": hashlib.sha256(TOKEN.encode()).hexdigest()}]}
    gate_argv = [sys.executable, str(args.gate_script)] if args.gate_script else None
    root = state_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-gate-", dir=root) as work, \
            support_gate.rest_fixture(runtime, Path(work), fixture_port) as fixture:
        make_table(fixture.uri, args.snapshots)
        # The catalog's JVM warmed up before either side is measured (else the side measured second gains).
        for path in ("/v1/config", f"/v1/namespaces/{NAMESPACE}/tables/{TABLE}"):
            reused({"warm-up": fixture.uri + path}, 500)
        with support_gate.running_gate({**config, "upstream": fixture.uri}, argv=gate_argv) as gate:
            which = f"script {args.gate_script}" if args.gate_script else "lakehouse_platform.runtime.catalog_gate"
            print(f"  gate: {which} (pid {gate.pid})")
            figures = measure(fixture.uri, gate.url, gate.pid, args)
    report(figures)
    print(f"  host load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
