"""The metrics exporter: table signals from the Iceberg metadata, service signals from the platform (observability).

Signals come from what the tables' metadata says and what the platform itself records, never from
engine logs:

- per table (labels ``catalog``, ``namespace``, ``table``): age of the last commit that changed data
  (a maintenance ``replace`` is not new data) against the table's freshness promise; snapshot count and
  the oldest snapshot's age against its retention; live data and delete files of the current snapshot,
  the delete-file ratio, small data files; its last maintenance runs (``infra.operations.runs``);
- per service: up (its health check), restarts and state from its watchdog (native), the catalog
  answering ``/v1/config`` and a load-table round trip, and how long each took.

Which tables: every declared table (``spec.tables``, with its promise; missing ones are reported with
``iceberg_table_exists 0``) and, with ``discover``, every other table in the catalog, whose promise is
its ``platform.freshness-minutes`` property if it has one (tables as code write it), else the stack's
default (``observability.freshness_minutes``).

Cost: a background thread refreshes every table each ``refresh_interval_s`` with ``workers`` loads in
parallel, and a scrape only reads the last result, so a Prometheus scrape stays fast at hundreds of
tables. Per table per refresh: one load-table from the catalog (snapshots and history come with it);
the manifest list and manifests are read from storage only when the current snapshot changed, and a
manifest already read (they are immutable) is never read again. Another thread checks the catalog
and, on a thread of its own, the services and the run record, every ``probe_interval_s`` (the
catalog-down and maintenance-failed signals do not wait for a refresh, and a hung service does not
delay the catalog's signal); each request waits at most ``request_timeout_s``.

It reads as the read-only identity (the stack's reader), so watching can never write.
``python -m infra.operations.exporter --config exporter.json`` (``--once``: one refresh, print the
metrics, exit).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from wsgiref.simple_server import WSGIRequestHandler, make_server

import requests
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, generate_latest, make_wsgi_app
from pydantic import BaseModel, ConfigDict, Field

from infra.operations import runs
from infra.operations.config import LISTEN_BACKLOG

#: A table property tables-as-code writes with the declared promise (minutes).
FRESHNESS_PROPERTY = "platform.freshness-minutes"
TABLE_LABELS = ["catalog", "namespace", "table"]
# The watchdog's status reader (infra/targets/native/watchdog.py), loaded by path: importing the targets
# package would import Pulumi into a process that only watches.
_WATCHDOG = Path(__file__).resolve().parents[1] / "targets" / "native" / "watchdog.py"


def _watchdog_reader() -> Any:
    spec = importlib.util.spec_from_file_location("_lakehouse_exporter_watchdog", _WATCHDOG)
    if spec is None or spec.loader is None:  # pragma: no cover - the file ships with the package
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.read_status


# -- configuration ---------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TableWatch(_Model):
    """A declared table: its promise and retention."""

    namespace: str
    name: str
    owner: str = ""
    freshness_s: float
    retention_s: float


class HealthCheck(_Model):
    kind: Literal["http", "tcp"]
    url: str = ""
    host: str = "127.0.0.1"
    port: int = 0


class ServiceWatch(_Model):
    """A service whose health (and, natively, whose watchdog) the exporter reports."""

    name: str
    health: HealthCheck | None = None
    data_dir: str | None = None  # where its watchdog keeps .watchdog.json (native)


class ExporterConfig(_Model):
    """What the service definition renders (the ``exporter`` service package)."""

    listen_host: str = "127.0.0.1"
    listen_port: int
    catalog_name: str
    catalog: dict[str, str] = Field(description="PyIceberg properties of the reading identity.")
    tables: list[TableWatch] = []
    default_freshness_s: float
    default_retention_s: float
    small_file_bytes: int
    discover: bool = True
    namespaces: list[str] | None = None  # discover only these (None: every namespace)
    runs_db: str | None = None
    maintenance_jobs: list[str] = []
    services: list[ServiceWatch] = []
    refresh_interval_s: float = 30.0
    probe_interval_s: float = 5.0
    workers: int = 8
    request_timeout_s: float = 5.0


# -- what one refresh learns -----------------------------------------------------------------------


@dataclass(frozen=True)
class FileStats:
    """Live files of one manifest (or of a whole snapshot, summed)."""

    data_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    small_data_files: int = 0
    data_bytes: int = 0
    records: int = 0

    def __add__(self, other: FileStats) -> FileStats:
        return FileStats(*(a + b for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[int, ...]:
        return (self.data_files, self.position_delete_files, self.equality_delete_files, self.small_data_files,
                self.data_bytes, self.records)

    @property
    def delete_files(self) -> int:
        return self.position_delete_files + self.equality_delete_files


@dataclass
class TableState:
    """What the exporter knows about one table."""

    namespace: str
    name: str
    declared: bool
    owner: str
    freshness_s: float
    retention_s: float
    exists: bool = True
    error: str | None = None
    last_data_commit: float | None = None  # epoch seconds of the last commit that was not a replace
    created: float | None = None  # when the table's metadata was first written (for a table never written)
    snapshots: int = 0
    oldest_snapshot: float | None = None
    snapshot_id: int | None = None
    manifests: int = 0
    files: FileStats = field(default_factory=FileStats)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


@dataclass
class Probe:
    """The last catalog and service checks."""

    catalog_up: bool = False
    config_seconds: float | None = None
    load_seconds: float | None = None
    services: dict[str, bool] = field(default_factory=dict)
    supervisors: dict[str, dict[str, Any]] = field(default_factory=dict)


def _ident(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def last_data_commit(snapshots: list[Any]) -> float | None:
    """Epoch seconds of the newest snapshot that changed data: a ``replace`` (compaction, manifest rewrites)
    rewrites what is there and says nothing about freshness."""
    data = [s.timestamp_ms / 1000 for s in snapshots if s.summary is None or s.summary.operation.value != "replace"]
    return max(data) if data else None


_ENV = re.compile(r"\$\{ENV:([A-Za-z0-9_]+)\}")


def expand_env(props: dict[str, str]) -> dict[str, str]:
    """Catalog properties with ``${ENV:NAME}`` taken from the environment (the config file holds no secret)."""
    def value(match: re.Match[str]) -> str:
        if match.group(1) not in os.environ:
            raise KeyError(f"catalog property needs ${{ENV:{match.group(1)}}}, which is not set")
        return os.environ[match.group(1)]
    return {key: _ENV.sub(value, text) for key, text in props.items()}


class Exporter:
    """Keeps the signals current in background threads; ``collect`` only reads them (a Prometheus collector)."""

    def __init__(self, config: ExporterConfig):
        self.config = config
        self.catalog_props = expand_env(config.catalog)
        self.lock = threading.Lock()
        self.tables: dict[tuple[str, str], TableState] = {}
        self.probe = Probe()
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
        self._read_status = _watchdog_reader()
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
        found = {(t.namespace, t.name): TableState(t.namespace, t.name, True, t.owner, t.freshness_s, t.retention_s)
                 for t in cfg.tables}
        if cfg.discover:
            catalog = self.catalog()
            listed = [tuple(n.split(".")) for n in cfg.namespaces] if cfg.namespaces is not None \
                else catalog.list_namespaces()
            for namespace in listed:
                for ident in catalog.list_tables(namespace):
                    key = (".".join(ident[:-1]), ident[-1])
                    found.setdefault(key, TableState(key[0], key[1], False, "", cfg.default_freshness_s,
                                                     cfg.default_retention_s))
        return list(found.values())

    def read_table(self, state: TableState) -> TableState:
        """One table's signals: one load-table; the manifests only when the current snapshot changed."""
        from pyiceberg.exceptions import NoSuchTableError
        from pyiceberg.manifest import DataFileContent

        previous = self.tables.get(state.key)
        try:
            table = self.catalog().load_table(_ident(*state.key))
        except NoSuchTableError:
            return replace(state, exists=False, error=None)
        metadata = table.metadata
        if not state.declared and FRESHNESS_PROPERTY in metadata.properties:
            with contextlib.suppress(ValueError):
                state = replace(state, freshness_s=float(metadata.properties[FRESHNESS_PROPERTY]) * 60)
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
                               (self.config.refresh_interval_s, self.refresh)):
            threading.Thread(target=self._loop, args=(interval, work), daemon=True,
                             name=f"exporter-{work.__name__}").start()

    # -- exposition ----------------------------------------------------------------------------------

    def describe(self) -> list[Metric]:
        return []  # unchecked collector: families are produced at scrape time

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            tables = [replace(t) for t in self.tables.values()]
            probe, last_runs = self.probe, list(self.last_runs)
            refresh_seconds, last_refresh, errors = self.refresh_seconds, self.last_refresh, self.refresh_errors
            sources = dict(self.source_errors)
        now = time.time()
        catalog = self.config.catalog_name
        yield from table_families(catalog, tables, last_runs, set(self.config.maintenance_jobs), now)
        yield from service_families(catalog, probe, self.config.services)
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


def table_families(catalog: str, tables: list[TableState], last_runs: list[runs.Run], jobs: set[str],
                   now: float) -> Iterator[Metric]:
    """The per-table metric families (see the module docstring)."""
    def gauge(name: str, help_text: str, extra: tuple[str, ...] = ()) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"iceberg_table_{name}", help_text, labels=[*TABLE_LABELS, *extra])

    exists = gauge("exists", "1 when the table resolves in the catalog (0: a declared table is missing).")
    declared = gauge("declared", "1 when the table is declared in the stack (spec.tables).")
    error = gauge("scrape_error", "1 when the table could not be read at the last refresh.")
    promise = gauge("freshness_promise_seconds", "The table's freshness promise.", ("owner",))
    last_commit = gauge("last_data_commit_timestamp_seconds", "When the last commit that changed data happened "
                                                               "(maintenance replace commits excluded).")
    age = gauge("snapshot_age_seconds", "Seconds since the last commit that changed data (since creation if none).")
    snapshots = gauge("snapshots", "Snapshots in the table's metadata.")
    oldest = gauge("oldest_snapshot_age_seconds", "Age of the oldest snapshot still kept.")
    retention = gauge("snapshot_retention_seconds", "How long snapshots are meant to be kept (expire threshold).")
    data_files = gauge("data_files", "Live data files of the current snapshot.")
    delete_files = gauge("delete_files", "Live delete files (position and equality) of the current snapshot.")
    ratio = gauge("delete_file_ratio", "Delete files / (data files + delete files).")
    small = gauge("small_data_files", "Live data files smaller than the small-file size.")
    data_bytes = gauge("data_bytes", "Bytes of the live data files.")
    records = gauge("records", "Records in the live data files (before deletes are applied).")
    manifests = gauge("manifests", "Manifests of the current snapshot.")
    for t in tables:
        labels = [catalog, t.namespace, t.name]
        exists.add_metric(labels, 1 if t.exists else 0)
        declared.add_metric(labels, 1 if t.declared else 0)
        promise.add_metric([*labels, t.owner], t.freshness_s)
        retention.add_metric(labels, t.retention_s)
        if not t.exists:
            continue
        error.add_metric(labels, 1 if t.error else 0)
        reference = t.last_data_commit if t.last_data_commit is not None else t.created
        if t.last_data_commit is not None:
            last_commit.add_metric(labels, t.last_data_commit)
        if reference is not None:
            age.add_metric(labels, max(0.0, now - reference))
        snapshots.add_metric(labels, t.snapshots)
        if t.oldest_snapshot is not None:
            oldest.add_metric(labels, max(0.0, now - t.oldest_snapshot))
        files = t.files
        data_files.add_metric(labels, files.data_files)
        delete_files.add_metric(labels, files.delete_files)
        ratio.add_metric(labels, files.delete_files / (files.data_files + files.delete_files)
                         if files.data_files + files.delete_files else 0.0)
        small.add_metric(labels, files.small_data_files)
        data_bytes.add_metric(labels, files.data_bytes)
        records.add_metric(labels, files.records)
        manifests.add_metric(labels, t.manifests)
    yield from (exists, declared, error, promise, last_commit, age, snapshots, oldest, retention, data_files,
                delete_files, ratio, small, data_bytes, records, manifests)

    known = {(t.namespace, t.name) for t in tables}
    # Not "job": Prometheus reserves it for the scrape job (an exported "job" becomes "exported_job").
    run_labels = [*TABLE_LABELS, "action"]
    success = GaugeMetricFamily("iceberg_maintenance_last_run_success", "1 when the last finished run of the "
                                                                        "maintenance action on the table succeeded.",
                                labels=run_labels)
    finished = GaugeMetricFamily("iceberg_maintenance_last_run_timestamp_seconds",
                                 "When the last maintenance run of the job on the table ended.", labels=run_labels)
    duration = GaugeMetricFamily("iceberg_maintenance_last_run_duration_seconds",
                                 "How long the last maintenance run of the job on the table took.", labels=run_labels)
    for run in last_runs:
        namespace, _, name = run.target.rpartition(".")
        if run.status == "running" or (jobs and run.job not in jobs) or (namespace, name) not in known:
            continue
        labels = [catalog, namespace, name, run.job]
        success.add_metric(labels, 1 if run.status == "ok" else 0)
        ended = run.ended_at or run.started_at
        finished.add_metric(labels, ended)
        duration.add_metric(labels, max(0.0, ended - run.started_at))
    yield from (success, finished, duration)


def operation_families(last_runs: list[runs.Run]) -> Iterator[Metric]:
    """The last run of every operation the run record holds (maintenance, backups), by job and target."""
    success = GaugeMetricFamily("lakehouse_operation_last_run_success", "1 when the last finished run succeeded.",
                                labels=["operation", "target"])
    finished = GaugeMetricFamily("lakehouse_operation_last_run_timestamp_seconds", "When the last finished run ended.",
                                 labels=["operation", "target"])
    for run in last_runs:
        if run.status == "running":
            continue
        success.add_metric([run.job, run.target], 1 if run.status == "ok" else 0)
        finished.add_metric([run.job, run.target], run.ended_at or run.started_at)
    yield from (success, finished)


SUPERVISOR_STATES = ("running", "backoff", "gave-up", "stopped", "starting", "failed-to-start")


def service_families(catalog: str, probe: Probe, services: list[ServiceWatch]) -> Iterator[Metric]:
    """Catalog and service signals from the last probe."""
    up = GaugeMetricFamily("lakehouse_catalog_up", "1 when the catalog answers /v1/config and a load-table round trip.",
                           labels=["catalog"])
    up.add_metric([catalog], 1 if probe.catalog_up else 0)
    yield up
    latency = GaugeMetricFamily("lakehouse_catalog_request_seconds", "How long the exporter's last catalog "
                                                                     "requests took.", labels=["catalog", "request"])
    if probe.config_seconds is not None:
        latency.add_metric([catalog, "config"], probe.config_seconds)
    if probe.load_seconds is not None:
        latency.add_metric([catalog, "load_table"], probe.load_seconds)
    yield latency
    service_up = GaugeMetricFamily("lakehouse_service_up", "1 when the service answers its health check.",
                                   labels=["service"])
    for name, healthy in sorted(probe.services.items()):
        service_up.add_metric([name], 1 if healthy else 0)
    yield service_up
    restarts = GaugeMetricFamily("lakehouse_service_restarts", "Restarts of the service by its watchdog since it was "
                                                               "(re)deployed.", labels=["service"])
    state = GaugeMetricFamily("lakehouse_service_state", "1 for the watchdog's state of the service "
                                                         "(gave-up: crash-looped past its restart limit).",
                              labels=["service", "state"])
    for service in services:
        status = probe.supervisors.get(service.name)
        if status is None:
            continue
        restarts.add_metric([service.name], float(status.get("restarts") or 0))
        current = str(status.get("state") or "unknown")
        for name in (*SUPERVISOR_STATES, *(() if current in SUPERVISOR_STATES else (current,))):
            state.add_metric([service.name, name], 1 if name == current else 0)
    yield restarts
    yield state


class MetricsServer(ThreadingWSGIServer):
    """``/metrics`` of the default registry: prometheus-client's threaded WSGI server, listening with a real backlog
    (``LISTEN_BACKLOG``; its own start_http_server keeps socketserver's 5)."""

    request_queue_size = LISTEN_BACKLOG


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a scrape every few seconds would flood the log


def serve_metrics(host: str, port: int) -> MetricsServer:
    """Serve the default registry on ``host:port`` in a daemon thread; the server (its port, to stop it)."""
    server = make_server(host, port, make_wsgi_app(REGISTRY), MetricsServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.operations.exporter", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--once", action="store_true", help="refresh once, print the metrics, exit")
    args = parser.parse_args(argv)
    config = ExporterConfig.model_validate(json.loads(args.config.read_text()))
    exporter = Exporter(config)
    if args.once:
        exporter.refresh()
        exporter.probe_once()
        REGISTRY.register(exporter)
        sys.stdout.write(generate_latest(REGISTRY).decode())
        return 0
    REGISTRY.register(exporter)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    serve_metrics(config.listen_host, config.listen_port)
    exporter.start()
    sys.stderr.write(f"[exporter] serving http://{config.listen_host}:{config.listen_port}/metrics; "
                     f"{len(config.tables)} declared tables, discover={config.discover}\n")
    sys.stderr.flush()
    stopped.wait()
    exporter.stopping.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
