"""The exporter's threads: a refresh of every table and the catalog and service checks; ``collect`` reads them."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import requests
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from lakehouse_platform.runtime import runs, watchdog
from lakehouse_platform.runtime.exporter.config import DatabaseWatch, ExporterConfig, HealthCheck, expand_env
from lakehouse_platform.runtime.exporter.metrics import (
    disk_families,
    operation_families,
    service_families,
    table_families,
)
from lakehouse_platform.runtime.exporter.state import (
    FRESHNESS_PROPERTY,
    OWNER_PROPERTY,
    Disks,
    FileStats,
    Probe,
    TableState,
    ident,
    last_data_commit,
)


class Exporter:
    """Keeps the signals current in background threads; ``collect`` only reads them (a Prometheus collector)."""

    def __init__(self, config: ExporterConfig):
        self.config = config
        self.catalog_props = expand_env(config.catalog)
        self.lock = threading.Lock()
        self.tables: dict[tuple[str, str], TableState] = {}
        self.probe = Probe()
        self.disks = Disks()
        self.manifest_stats: dict[str, FileStats] = {}  # manifest path -> its live files (manifests are immutable)
        # table -> (current snapshot id, its manifests' paths, its live files)
        self.snapshot_stats: dict[tuple[str, str], tuple[int, tuple[str, ...], FileStats]] = {}
        self.last_runs: list[runs.Run] = []
        self.refresh_seconds: float | None = None
        self.last_refresh: float | None = None
        self.refresh_errors = 0
        # source -> the error of its last read (None: read fine). A source that fails is itself a signal
        # (lakehouse_signal_source_up 0) and its error is logged once per change: never swallowed.
        self.source_errors: dict[str, str | None] = {}
        self.stopping = threading.Event()
        self._catalog: Any = None
        self._read_status = watchdog.read_status
        self.session = requests.Session()
        self.session.trust_env = False  # loopback services: no proxies, no CA bundle from the environment
        self.health_session = requests.Session()  # the services' checks, on their own thread
        self.health_session.trust_env = False

    def source_read(self, source: str, error: BaseException | None = None) -> None:
        """Record whether a signal source (the run record, the catalog's table list) could be read."""
        text = None if error is None else f"{type(error).__name__}: {error}"[:500]
        with self.lock:
            previous = self.source_errors.get(source)
            self.source_errors[source] = text
        if text is not None and text != previous:
            sys.stderr.write(f"[exporter] signal source {source} failed: {text}\n")
        elif text is None and previous is not None:  # it failed before: say it reads again
            sys.stderr.write(f"[exporter] signal source {source} read again\n")
        sys.stderr.flush()

    # -- catalog ---------------------------------------------------------------------------------

    def catalog(self) -> Any:
        if self._catalog is None:
            from pyiceberg.catalog import load_catalog

            self._catalog = load_catalog("exporter", **self.catalog_props)  # not the service: the client's catalog name
        return self._catalog

    def _headers(self) -> dict[str, str]:
        token = self.catalog_props.get("token")
        return {"Authorization": f"Bearer {token}"} if token else {}

    # -- tables ----------------------------------------------------------------------------------

    def watched(self) -> list[TableState]:
        """Declared tables, then (with discover) every other table the catalog lists."""
        cfg = self.config
        found = {(t.namespace, t.name): TableState(t.namespace, t.name, t.declared, t.owner, t.freshness_s,
                                                   t.retention_s, max_snapshots=t.max_snapshots,
                                                   max_metadata_bytes=t.max_metadata_bytes)
                 for t in cfg.tables}
        if cfg.discover:
            catalog = self.catalog()
            listed = [tuple(n.split(".")) for n in cfg.namespaces] if cfg.namespaces is not None \
                else catalog.list_namespaces()
            for namespace in listed:
                for ident in catalog.list_tables(namespace):
                    key = (".".join(ident[:-1]), ident[-1])
                    found.setdefault(key, TableState(key[0], key[1], False, "", cfg.default_freshness_s,
                                                     cfg.default_retention_s,
                                                     max_snapshots=cfg.default_max_snapshots,
                                                     max_metadata_bytes=cfg.default_max_metadata_bytes))
        return list(found.values())

    def read_table(self, state: TableState) -> TableState:
        """One table's signals: one load-table; the manifests only when the current snapshot changed."""
        from pyiceberg.exceptions import NoSuchTableError
        from pyiceberg.manifest import DataFileContent

        previous = self.tables.get(state.key)
        started = time.perf_counter()
        try:
            table = self.catalog().load_table(ident(*state.key))
        except NoSuchTableError:
            return replace(state, exists=False, error=None)
        # What every scan's planning starts with, and what grows with the table's history: the catalog's answer
        # and metadata.json parsed (the manifests it then reads grow with the data, which is fine).
        state = replace(state, load_seconds=time.perf_counter() - started)
        metadata = table.metadata
        if not state.declared and FRESHNESS_PROPERTY in metadata.properties:
            with contextlib.suppress(ValueError):
                state = replace(state, freshness_s=float(metadata.properties[FRESHNESS_PROPERTY]) * 60)
        if not state.owner and metadata.properties.get(OWNER_PROPERTY):
            state = replace(state, owner=metadata.properties[OWNER_PROPERTY])
        state = replace(state, metadata_location=table.metadata_location, metadata_bytes=self._metadata_bytes(
            table, previous))
        snapshots = list(metadata.snapshots)
        last_data = last_data_commit(snapshots)
        # Expiry may drop the last data commit's snapshot: never forget a newer one seen before.
        if previous is not None and previous.last_data_commit is not None:
            last_data = max(last_data or 0.0, previous.last_data_commit)
        created = (min(e.timestamp_ms for e in metadata.metadata_log) / 1000 if metadata.metadata_log
                   else metadata.last_updated_ms / 1000)
        state = replace(state, exists=True, error=None, last_data_commit=last_data, created=created,
                        snapshots=len(snapshots),
                        oldest_snapshot=min((s.timestamp_ms for s in snapshots), default=None))
        if state.oldest_snapshot is not None:
            state.oldest_snapshot /= 1000
        current = table.current_snapshot()
        if current is None:
            return replace(state, snapshot_id=None, manifests=0, files=FileStats())
        cached = self.snapshot_stats.get(state.key)
        if cached is not None and cached[0] == current.snapshot_id:
            return replace(state, snapshot_id=current.snapshot_id, manifests=len(cached[1]), files=cached[2])
        total = FileStats()
        manifests = current.manifests(table.io)
        small = self.config.small_file_bytes
        for manifest in manifests:
            stats = self.manifest_stats.get(manifest.manifest_path)
            if stats is None:
                counts = [0, 0, 0, 0, 0, 0]
                for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                    data_file = entry.data_file
                    if data_file.content == DataFileContent.DATA:
                        counts[0] += 1
                        counts[3] += data_file.file_size_in_bytes < small
                        counts[4] += data_file.file_size_in_bytes
                        counts[5] += data_file.record_count
                    elif data_file.content == DataFileContent.POSITION_DELETES:
                        counts[1] += 1
                    else:
                        counts[2] += 1
                stats = FileStats(*counts)
                with self.lock:
                    self.manifest_stats[manifest.manifest_path] = stats
            total = total + stats
        with self.lock:
            self.snapshot_stats[state.key] = (current.snapshot_id, tuple(m.manifest_path for m in manifests), total)
        return replace(state, snapshot_id=current.snapshot_id, manifests=len(manifests), files=total)

    @staticmethod
    def _metadata_bytes(table: Any, previous: TableState | None) -> int | None:
        """The current metadata.json's size: a HEAD when the table committed since the last refresh."""
        location = table.metadata_location
        if previous is not None and previous.metadata_location == location and previous.metadata_bytes is not None:
            return previous.metadata_bytes
        try:
            return len(table.io.new_input(location))
        except OSError:
            return None

    def refresh(self) -> None:
        """Every watched table, ``workers`` at a time; then the run record."""
        started = time.perf_counter()
        try:
            watched = self.watched()
        except Exception as exc:  # noqa: BLE001 - the catalog is down: keep what we knew, say it
            self.source_read("tables", exc)
            with self.lock:
                self.refresh_errors += 1
                for state in self.tables.values():
                    state.error = f"listing tables: {exc}"
            return
        self.source_read("tables")

        def one(state: TableState) -> TableState:
            try:
                return self.read_table(state)
            except Exception as exc:  # noqa: BLE001 - one unreadable table must not hide the others
                previous = self.tables.get(state.key)
                kept = replace(previous) if previous is not None else state
                kept.error = f"{type(exc).__name__}: {exc}"[:300]
                return kept

        with ThreadPoolExecutor(max_workers=self.config.workers, thread_name_prefix="exporter-table") as pool:
            results = list(pool.map(one, watched))
        fresh = {state.key: state for state in results}
        with self.lock:
            self.tables = fresh
            # Forget tables gone and manifests no current snapshot references (read for a snapshot now gone).
            for key in [k for k in self.snapshot_stats if k not in fresh]:
                del self.snapshot_stats[key]
            live = {path for _, paths, _ in self.snapshot_stats.values() for path in paths}
            for path in [p for p in self.manifest_stats if p not in live]:
                del self.manifest_stats[path]
        with self.lock:
            self.refresh_seconds = time.perf_counter() - started
            self.last_refresh = time.time()

    # -- catalog and services ----------------------------------------------------------------------

    def probe_once(self) -> None:
        """The catalog, then the services and the run record (``--once``; the threads run them apart)."""
        self.probe_catalog()
        self.probe_services()

    def probe_catalog(self) -> None:
        """``/v1/config`` and a load-table round trip; published at once, whatever the services do.

        It runs on a thread of its own: a hung service (its health check waits ``request_timeout_s``)
        never delays ``lakehouse_catalog_up``, so the catalog-down bound has one timeout in it, not one
        per service (``ObservabilitySpec.catalog_down_bound_s``).
        """
        uri = self.catalog_props["uri"].rstrip("/")
        timeout = self.config.request_timeout_s
        config_seconds = load_seconds = None
        try:
            started = time.perf_counter()
            answer = self.session.get(f"{uri}/v1/config", headers=self._headers(), timeout=timeout)
            config_ok = answer.status_code == 200
            config_seconds = time.perf_counter() - started
        except requests.RequestException:
            config_ok = False
        load_ok = False
        if config_ok:
            with self.lock:
                known = sorted(k for k, t in self.tables.items() if t.exists)
            # A load-table round trip of a known table (namespace levels joined by the unit separator, %1F).
            path = (f"/v1/namespaces/{known[0][0].replace('.', '%1F')}/tables/{known[0][1]}" if known
                    else "/v1/namespaces")
            try:
                started = time.perf_counter()
                load_ok = self.session.get(f"{uri}{path}", headers=self._headers(), timeout=timeout).status_code == 200
                load_seconds = time.perf_counter() - started
            except requests.RequestException:
                load_ok = False
        with self.lock:
            self.probe = replace(self.probe, catalog_up=config_ok and load_ok, config_seconds=config_seconds,
                                 load_seconds=load_seconds)

    def probe_services(self) -> None:
        """Each service's health check and watchdog state, and the run record."""
        cfg = self.config
        if cfg.runs_db:  # a local SQLite read: cheap enough for every probe, so a failed run shows at once
            try:
                latest = runs.latest(Path(cfg.runs_db))
            except Exception as exc:  # noqa: BLE001 - said as a signal and in the log; read again next probe
                self.source_read("runs", exc)
                latest = self.last_runs
            else:
                self.source_read("runs")
            with self.lock:
                self.last_runs = latest
        services: dict[str, bool] = {}
        supervisors: dict[str, dict[str, Any]] = {}
        for service in cfg.services:
            if service.health is not None:
                services[service.name] = self._healthy(service.health)
            if service.data_dir and self._read_status is not None:
                supervisors[service.name] = self._read_status(service.data_dir)
        with self.lock:
            self.probe = replace(self.probe, services=services, supervisors=supervisors)

    def _healthy(self, check: HealthCheck) -> bool:
        timeout = self.config.request_timeout_s
        try:
            if check.kind == "tcp":
                with socket.create_connection((check.host, check.port), timeout=timeout):
                    return True
            return self.health_session.get(check.url, timeout=timeout).status_code == 200
        except (OSError, requests.RequestException):
            return False

    # -- disks -------------------------------------------------------------------------------------

    def measure_disks(self) -> None:
        """Each service's state on disk (its data dir, natively) and the database's replication slots."""
        sizes = {}
        for service in self.config.services:
            if service.data_dir:
                sizes[service.name] = disk_usage(service.data_dir) + (log_usage(service.log_file)
                                                                      if service.log_file else 0)
        slots = self.disks.slots
        if self.config.database is not None:
            try:
                slots = replication_slots(self.config.database)
            except Exception as exc:  # noqa: BLE001 - said as a signal and in the log; read again next time
                self.source_read("replication_slots", exc)
            else:
                self.source_read("replication_slots")
        with self.lock:
            self.disks = Disks(state_bytes=sizes, measured_at=time.time(), slots=slots)

    # -- threads -----------------------------------------------------------------------------------

    def _loop(self, interval: float, work: Any) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - a watcher keeps watching
                sys.stderr.write(f"[exporter] {work.__name__} failed: {type(exc).__name__}: {exc}\n")
            self.stopping.wait(max(0.0, interval - (time.monotonic() - started)))

    def start(self) -> None:
        for interval, work in ((self.config.probe_interval_s, self.probe_catalog),
                               (self.config.probe_interval_s, self.probe_services),
                               (self.config.refresh_interval_s, self.refresh),
                               (self.config.disk_interval_s, self.measure_disks)):
            threading.Thread(target=self._loop, args=(interval, work), daemon=True,
                             name=f"exporter-{work.__name__}").start()

    # -- exposition ----------------------------------------------------------------------------------

    def describe(self) -> list[Metric]:
        return []  # unchecked collector: families are produced at scrape time

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            tables = [replace(t) for t in self.tables.values()]
            probe, last_runs, disks = self.probe, list(self.last_runs), self.disks
            refresh_seconds, last_refresh, errors = self.refresh_seconds, self.last_refresh, self.refresh_errors
            sources = dict(self.source_errors)
        now = time.time()
        catalog = self.config.catalog_name
        yield from table_families(catalog, tables, last_runs, set(self.config.maintenance_jobs), now)
        yield from service_families(catalog, probe, self.config.services)
        yield from disk_families(disks, self.config.services)
        yield from operation_families(last_runs)
        own = GaugeMetricFamily("lakehouse_exporter_tables", "Tables the exporter watches.")
        own.add_metric([], len(tables))
        yield own
        if refresh_seconds is not None and last_refresh is not None:
            took = GaugeMetricFamily("lakehouse_exporter_refresh_seconds",
                                     "How long the last refresh of every table took.")
            took.add_metric([], refresh_seconds)
            yield took
            at = GaugeMetricFamily("lakehouse_exporter_last_refresh_timestamp_seconds", "When the last refresh ended.")
            at.add_metric([], last_refresh)
            yield at
        failed = CounterMetricFamily("lakehouse_exporter_refresh_errors", "Refreshes that could not list the tables.")
        failed.add_metric([], errors)
        yield failed
        source_up = GaugeMetricFamily("lakehouse_signal_source_up", "1 when the exporter read the source at its last "
                                      "attempt; 0: the signals from it are stale (the error is in the exporter's log)",
                                      labels=["source"])
        for source, error in sorted(sources.items()):
            source_up.add_metric([source], 0 if error else 1)
        yield source_up


def disk_usage(path: str) -> int:
    """Bytes a directory tree takes on disk (allocated blocks, each hard-linked file once, symlinks not followed):
    what ``du -s`` says. Files that vanish while it walks are skipped."""
    try:
        total = os.lstat(path).st_blocks * 512
    except OSError:
        return 0
    seen: set[tuple[int, int]] = set()
    for root, dirs, files in os.walk(path, onerror=lambda _error: None):
        for name in (*dirs, *files):
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if info.st_nlink > 1:
                if (info.st_dev, info.st_ino) in seen:
                    continue
                seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


def log_usage(log_file: str) -> int:
    """Bytes a service's log and its rotated copies (``<log>.1``, ...) take on disk."""
    path = Path(log_file)
    total = 0
    for candidate in (path, *path.parent.glob(f"{path.name}.*")):
        with contextlib.suppress(OSError):
            total += candidate.stat().st_blocks * 512
    return total


SLOTS_SQL = ("SELECT slot_name, active, coalesce(wal_status, ''), "
             "coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint FROM pg_replication_slots")


def replication_slots(database: DatabaseWatch) -> dict[str, tuple[int, bool, str]]:
    """slot -> (bytes of WAL it holds back, whether a consumer is attached, its wal_status): what a slot nobody
    reads costs the database's disk (PostgreSQL keeps every WAL segment from the slot's restart point on)."""
    import psycopg

    password = expand_env({"password": database.password})["password"]
    maintenance_db = "postgres"  # not the service: the server's own database, which every server has
    with psycopg.connect(host=database.host, port=database.port, user=database.user, password=password,
                         dbname=maintenance_db, connect_timeout=5) as connection:
        rows = connection.execute(SLOTS_SQL).fetchall()
    return {str(name): (int(held), bool(active), str(status)) for name, active, status, held in rows}
