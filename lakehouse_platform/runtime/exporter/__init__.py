"""The metrics exporter: table signals from the Iceberg metadata, service signals from the platform (observability).

Signals come from what the tables' metadata says and what the platform itself records, never from
engine logs:

- per table (labels ``catalog``, ``namespace``, ``table``): age of the last commit that changed data
  (a maintenance ``replace`` is not new data) against the table's freshness promise; snapshot count and
  the oldest snapshot's age against its retention; live data and delete files of the current snapshot,
  the delete-file ratio, small data files; its last maintenance runs (``lakehouse_platform.runtime.runs``);
  what grows with its history: metadata.json's size, manifests of the current snapshot, how long a load of
  the table took (the catalog's answer and metadata.json parsed: the first step of every scan's planning),
  with the bounds its retention declares (``max_snapshots``, ``max_metadata_bytes``) and its owner;
- per service: up (its health check), restarts and state from its watchdog (native), the catalog
  answering ``/v1/config`` and a load-table round trip, and how long each took; natively its state on disk
  (its data dir and its log, every ``disk_interval_s``) against its disk budget; the database's replication
  slots and the WAL each holds back.

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
``python -m lakehouse_platform.runtime.exporter --config exporter.json`` (``--once``: one refresh, print the
metrics, exit).

Layout: ``config`` (what it watches), ``state`` (what a refresh learns), ``collector`` (the threads and
``collect``), ``metrics`` (one family per signal), ``__main__`` (the command).
"""

from __future__ import annotations

from lakehouse_platform.runtime.exporter.collector import Exporter, disk_usage, log_usage, replication_slots
from lakehouse_platform.runtime.exporter.config import ExporterConfig, HealthCheck, ServiceWatch, TableWatch, expand_env
from lakehouse_platform.runtime.exporter.metrics import (
           TABLE_LABELS,
           disk_families,
           operation_families,
           service_families,
           table_families,
)
from lakehouse_platform.runtime.exporter.state import (
    FRESHNESS_PROPERTY,
    Disks,
    FileStats,
    Probe,
    TableState,
    last_data_commit,
)

__all__ = ["FRESHNESS_PROPERTY", "TABLE_LABELS", "Disks", "Exporter", "ExporterConfig", "FileStats", "HealthCheck",
           "Probe", "ServiceWatch", "TableState", "TableWatch", "disk_families", "disk_usage", "expand_env",
           "last_data_commit", "log_usage", "operation_families", "replication_slots", "service_families",
           "table_families"]
