"""Benchmark: what watching costs, and how fast a stale table raises its alert.

Run: .venv/bin/python bench/bench_signals.py [--stack NAME] [--tables 10,200] [--stale 3]

Without ``--stack`` it deploys an isolated copy of the native stack (``bench``: its own block of ports and
state), measures, and destroys it; with ``--stack`` it measures a stack that is already up (and leaves it).

1. Scrape cost at 10 and 200 tables (each with two commits: two manifests): the exporter's own code
   (``lakehouse_platform.runtime.exporter``), run in this process as the reader identity with its catalog and S3
   requests sent through two counting proxies. Per phase: a cold refresh (nothing cached), a warm refresh
   (nothing changed), and a refresh after one new commit to every table; then the Prometheus scrape itself
   (``GET /metrics`` of the cached result). Prints seconds and requests, per table, and the growth from
   10 to 200 tables.
2. Stale to firing: ``--stale`` tables with a one-minute promise get one commit each; the time from each
   going stale to TableStale firing in the stack's Prometheus, against the declared bound.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest

from lakehouse_platform.control import clients, commands, isolated
from lakehouse_platform.control.workspace import forget, outputs
from lakehouse_platform.runtime import exporter as ex

STACK = "bench"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("value", pa.string())])
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailers", "upgrade", "proxy-authorization"}


class CountingProxy:
    """A loopback reverse proxy that forwards bytes unchanged (Host kept: S3 signatures stay valid) and counts."""

    def __init__(self, upstream: str):
        target = urlsplit(upstream)
        self.host, self.port = target.hostname or "127.0.0.1", target.port or 80
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.counts[self.command] += 1
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                upstream_conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=120)
                try:
                    upstream_conn.request(self.command, self.path, body=body, headers=headers)
                    response = upstream_conn.getresponse()
                    data = response.read()
                finally:
                    upstream_conn.close()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                # HEAD answers carry the object's length, not the (empty) body's: pyarrow reads it.
                self.send_header("Content-Length", response.getheader("Content-Length") or str(len(data))
                                 if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self) -> int:
        with self.lock:
            total = sum(self.counts.values())
            self.counts.clear()
        return total

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_tables(out: dict, namespace: str, count: int) -> list[str]:
    catalog = clients.pyiceberg_catalog(out)
    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace(namespace)
    existing = {t[-1] for t in catalog.list_tables(namespace)}
    names = [f"t{index:03d}" for index in range(count)]
    started = time.monotonic()
    for name in names:
        if name in existing:
            continue
        table = catalog.create_table(f"{namespace}.{name}", schema=SCHEMA)
        table.append(pa.table({"id": [1], "value": ["a"]}, schema=SCHEMA))
        table.append(pa.table({"id": [2], "value": ["b"]}, schema=SCHEMA))
    print(f"   {namespace}: {count} tables with 2 commits each ready in {time.monotonic() - started:.0f}s")
    return [f"{namespace}.{name}" for name in names]


def watcher(out: dict, namespace: str, catalog_proxy: CountingProxy, s3_proxy: CountingProxy) -> ex.Exporter:
    """The exporter as the stack runs it (reader identity), its requests through the counting proxies."""
    reader = clients.host_profiles(out).get("reader_identity", "reader")
    props = clients.profile(out, "pyiceberg", reader)
    props.update({"uri": catalog_proxy.url, "s3.endpoint": s3_proxy.url})
    config = ex.ExporterConfig(listen_port=0, catalog_name="bench", catalog=props, default_freshness_s=3600,
                               default_retention_s=7 * 86400, small_file_bytes=32 * 1024 * 1024,
                               namespaces=[namespace], workers=8)
    return ex.Exporter(config)


def scrape_seconds(watch: ex.Exporter, repeat: int = 5) -> tuple[float, int]:
    """Median seconds of rendering ``/metrics`` from the cached result, and the series it holds."""
    registry = CollectorRegistry()
    registry.register(watch)
    took, text = [], ""
    for _ in range(repeat):
        started = time.perf_counter()
        text = generate_latest(registry).decode()
        took.append(time.perf_counter() - started)
    return statistics.median(took), sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def measure_scrape_cost(out: dict, sizes: list[int]) -> list[dict]:
    rows = []
    gate = clients.profile(out, "pyiceberg")["uri"]
    store = clients.profile(out, "pyiceberg")["s3.endpoint"]
    for size in sizes:
        namespace = f"bench_signals_{size}"
        idents = make_tables(out, namespace, size)
        catalog_proxy, s3_proxy = CountingProxy(gate), CountingProxy(store)
        try:
            watch = watcher(out, namespace, catalog_proxy, s3_proxy)
            watch.catalog()  # GET /v1/config once, as the service does at start
            catalog_proxy.take()
            phases = []
            for phase in ("cold", "warm", "after one commit each"):
                if phase == "after one commit each":
                    writer = clients.pyiceberg_catalog(out)
                    for ident in idents:
                        writer.load_table(ident).append(pa.table({"id": [3], "value": ["c"]}, schema=SCHEMA))
                    catalog_proxy.take()
                    s3_proxy.take()
                started = time.perf_counter()
                watch.refresh()
                seconds = time.perf_counter() - started
                phases.append((phase, seconds, catalog_proxy.take(), s3_proxy.take()))
            scrape, series = scrape_seconds(watch)
            errors = sum(1 for t in watch.tables.values() if t.error)
        finally:
            catalog_proxy.close()
            s3_proxy.close()
        for phase, seconds, catalog_requests, s3_requests in phases:
            rows.append({"tables": size, "phase": phase, "seconds": seconds, "catalog": catalog_requests,
                         "s3": s3_requests, "scrape_ms": scrape * 1000, "series": series, "errors": errors})
    return rows


def print_scrape_cost(rows: list[dict]) -> None:
    print(f"\n{'tables':>6} {'phase':<22} {'refresh s':>9} {'catalog req':>11} {'/table':>6} {'S3 req':>7} "
          f"{'/table':>6} {'scrape ms':>9} {'series':>7}")
    for row in rows:
        print(f"{row['tables']:>6} {row['phase']:<22} {row['seconds']:>9.2f} {row['catalog']:>11} "
              f"{row['catalog'] / row['tables']:>6.2f} {row['s3']:>7} {row['s3'] / row['tables']:>6.2f} "
              f"{row['scrape_ms']:>9.1f} {row['series']:>7}" + (f"  ({row['errors']} tables unreadable)"
                                                                 if row["errors"] else ""))
    sizes = sorted({row["tables"] for row in rows})
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(f"\ngrowth {small} -> {large} tables (x{large / small:.0f}):")
        for phase in dict.fromkeys(row["phase"] for row in rows):
            a = next(r for r in rows if r["tables"] == small and r["phase"] == phase)
            b = next(r for r in rows if r["tables"] == large and r["phase"] == phase)
            def ratio(x: float, y: float) -> str:
                return f"x{y / x:.1f}" if x else "-"

            print(f"   {phase:<22} refresh {ratio(a['seconds'], b['seconds'])}, catalog requests "
                  f"{ratio(a['catalog'], b['catalog'])}, S3 requests {ratio(a['s3'], b['s3'])}, "
                  f"scrape {ratio(a['scrape_ms'], b['scrape_ms'])}")


def measure_stale_to_firing(out: dict, count: int) -> None:
    from lakehouse_platform.probes.support import signals

    obs = out.get("observability") or {}
    prometheus = obs["prometheus"]
    bound = obs["table_stale_for_s"] + 2 * obs["scrape_interval_s"]
    catalog = clients.pyiceberg_catalog(out)
    namespace = f"bench_stale_{int(time.time())}"
    catalog.create_namespace(namespace)
    stale_at = {}
    for index in range(count):
        table = catalog.create_table(f"{namespace}.s{index}", schema=SCHEMA, properties={ex.FRESHNESS_PROPERTY: "1"})
        table.append(pa.table({"id": [index], "value": ["x"]}, schema=SCHEMA))
        stale_at[f"s{index}"] = table.current_snapshot().timestamp_ms / 1000 + 60
    fired: dict[str, float] = {}
    deadline = max(stale_at.values()) + bound + 60
    while len(fired) < count and time.time() < deadline:
        for name in stale_at:
            if name not in fired and signals.alert_state(prometheus, "TableStale", namespace=namespace,
                                                         table=name) == "firing":
                fired[name] = time.time() - stale_at[name]
        time.sleep(1)
    latencies = sorted(fired.values())
    print(f"\nstale -> TableStale firing ({count} tables, promise 60 s; bound {bound} s = for "
          f"{obs['table_stale_for_s']} s + scrape and evaluation {2 * obs['scrape_interval_s']} s):")
    if latencies:
        print(f"   min {latencies[0]:.1f} s, median {statistics.median(latencies):.1f} s, max {latencies[-1]:.1f} s"
              f" ({len(latencies)}/{count} fired)")
    else:
        print("   none fired before the deadline")
    for index in range(count):
        catalog.purge_table(f"{namespace}.s{index}")
    catalog.drop_namespace(namespace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", help="measure this (deployed) stack instead of an isolated bench stack")
    parser.add_argument("--tables", default="10,200")
    parser.add_argument("--stale", type=int, default=3)
    args = parser.parse_args()
    name = args.stack or STACK
    if not args.stack:
        isolated.isolated_stack(STACK)
    try:
        if not args.stack:
            print(f"stack {STACK} up in {commands.up(STACK, quiet=True):.1f} s")
        out = outputs(name)
        load = os.getloadavg()
        print(f"load average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} ({os.cpu_count()} CPUs)")
        rows = measure_scrape_cost(out, [int(n) for n in args.tables.split(",")])
        print_scrape_cost(rows)
        Path("reports").mkdir(exist_ok=True)
        Path("reports/bench_signals.json").write_text(json.dumps(rows, indent=2))
        if args.stale:
            measure_stale_to_firing(out, args.stale)
        load = os.getloadavg()
        print(f"\nload average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    finally:
        if not args.stack:
            commands.down(STACK, quiet=True)
            forget(STACK)
            isolated.remove_stack_file(STACK)


if __name__ == "__main__":
    main()
