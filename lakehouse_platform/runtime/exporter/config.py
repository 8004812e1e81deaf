"""What the exporter watches: its configuration, rendered by the ``exporter`` service package."""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TableWatch(_Model):
    """A table the stack knows (declared, or a stream's): its promise, retention and bounds."""

    namespace: str
    name: str
    owner: str = ""
    declared: bool = True
    freshness_s: float
    retention_s: float
    max_snapshots: int = 0  # 0: no bound declared
    max_metadata_bytes: int = 0


class HealthCheck(_Model):
    kind: Literal["http", "tcp"]
    url: str = ""
    host: str = "127.0.0.1"
    port: int = 0


class ServiceWatch(_Model):
    """A service whose health (and, natively, whose watchdog) the exporter reports."""

    name: str
    health: HealthCheck | None = None
    data_dir: str | None = None  # where its watchdog keeps .watchdog.json and its state lives (native)
    log_file: str | None = None  # its log (native; rotated copies beside it: <log>.1, ...)
    disk_budget_bytes: int = 0  # the service's disk budget (0: none declared)


class DatabaseWatch(_Model):
    """Where the exporter reads the database's replication slots (how much WAL each holds back)."""

    host: str
    port: int
    user: str
    password: str  # ``${ENV:NAME}``: the value is in the exporter's environment


class ExporterConfig(_Model):
    """What the service definition renders (the ``exporter`` service package)."""

    listen_host: str = "127.0.0.1"
    listen_port: int
    catalog_name: str
    catalog: dict[str, str] = Field(description="PyIceberg properties of the reading identity.")
    tables: list[TableWatch] = []
    default_freshness_s: float
    default_retention_s: float
    default_max_snapshots: int = 0
    default_max_metadata_bytes: int = 0
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
    #: How often the services' state is measured on disk (a walk of each data dir).
    disk_interval_s: float = 60.0
    #: The platform's PostgreSQL, where its replication slots are read (``ENV:`` references for the password).
    database: DatabaseWatch | None = None


_ENV = re.compile(r"\$\{ENV:([A-Za-z0-9_]+)\}")


def expand_env(props: dict[str, str]) -> dict[str, str]:
    """Catalog properties with ``${ENV:NAME}`` taken from the environment (the config file holds no secret)."""
    def value(match: re.Match[str]) -> str:
        if match.group(1) not in os.environ:
            raise KeyError(f"catalog property needs ${{ENV:{match.group(1)}}}, which is not set")
        return os.environ[match.group(1)]
    return {key: _ENV.sub(value, text) for key, text in props.items()}
