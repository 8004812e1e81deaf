"""What one service offers the others, named by what it is, not by which service offers it.

A service that reaches another (Flink writes to the store, Polaris keeps its pointers in the database,
Connect reads the broker) asks the registry for the enabled provider of a capability
(``Registry.provider(spec, STORE)``, ``ServiceContext.provider(STORE)``) and talks to it through the
capability's contract: the named ports below, and the conventions each capability's summary states. The
service that offers it says so in its definition (``ServiceDefinition.provides``). So no module outside a
service's package names that service: replacing the store is one package that provides ``STORE``.

The other way one service may name another is its declared ``depends_on`` in its default spec (the start
order a stack may override, and which the review prints); see ``docs/adr/0009-services-meet-by-capability.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Capability:
    """Something a service offers the platform's other services, with the ports its provider must declare."""

    name: str
    summary: str
    ports: tuple[str, ...] = ()  # named ports every provider declares in its default spec

    def __str__(self) -> str:
        return self.name


STORE = Capability(
    "store", "the platform's S3-compatible object store (docker and native; aws uses S3 itself): the S3 API on "
             "port 's3', each identity's access key and secret key", ports=("s3",))
WAREHOUSE_BUCKET = Capability(
    "warehouse-bucket", "the job after which the warehouse bucket exists on the store: what a catalog that "
                        "test-writes to its storage waits for")
DATABASE = Capability(
    "database", "the platform's PostgreSQL server on port 'pg' (superuser DATABASE_USER, its password the secret "
                "DATABASE_PASSWORD): the catalogs' databases and the bookshop's source; and DATABASE_BACKUP_USER "
                "(password: the secret DATABASE_BACKUP_PASSWORD), a role that may read the catalog databases and "
                "nothing more: what backups dump as", ports=("pg",))
BROKER = Capability(
    "broker", "the Kafka broker: port 'broker' for the platform's services, port 'host' for clients on the host",
    ports=("broker", "host"))
SQL_ENGINE = Capability(
    "sql-engine", "the SQL engine that runs the Iceberg maintenance procedures (the scheduler's and EventBridge's "
                  "maintenance tasks, over Trino's protocol): its client profile gives host, port, http_scheme and "
                  "the certificate's name, its first per-identity secret is the identity's password")
CHANGE_CAPTURE = Capability(
    "change-capture", "captures the database's changes for the stack's Debezium sources (the logical replication "
                      "slots the database keeps for them); port 'rest': its workers' REST API, through which the "
                      "broker stops their sources before it restarts (``lakehouse_platform.runtime.connect_drain``)",
    ports=("rest",))
BACKUPS = Capability(
    "backups", "backs up the catalogs' pointers on the recovery schedule (a catalog's SQLite file by online backup, "
               "the catalog databases by pg_dump): what the recovery drill restores; its scheduled jobs at /jobs on "
               "port 'http'", ports=("http",))
STREAMING_WRITER = Capability(
    "streaming-writer", "the stream processor that runs the platform's streaming job (its REST API in its client "
                        "profile, the job's summary under 'job'), committing to Iceberg once per checkpoint")
REFERENCE_CATALOG = Capability(
    "reference-catalog", "Iceberg's reference REST catalog server: what the probes start a throwaway of, on this host, "
                         "for control experiments (its probes' support module: runtime, settings)")
MAINTENANCE = Capability(
    "maintenance", "runs the stack's declared maintenance on its schedules and records every run (its scheduled "
                   "jobs at /jobs on port 'http')", ports=("http",))
SIGNALS = Capability(
    "signals", "turns the tables' metadata and the platform's records into signals (its /metrics on port 'http')",
    ports=("http",))
METRICS = Capability(
    "metrics", "the metrics store that scrapes the platform's /metrics endpoints and evaluates the alert rules "
               "(port 'http')", ports=("http",))

#: The PostgreSQL role the platform's services use on the database (``DATABASE``).
DATABASE_USER = "postgres"  # a PostgreSQL role, not the service
#: The secret holding ``DATABASE_USER``'s password.
DATABASE_PASSWORD = "postgres-password"  # noqa: S105 - the name of a secret, not its value
#: The least role that dumps the catalog databases (no superuser: CONNECT and SELECT on them, nothing else).
DATABASE_BACKUP_USER = "lakehouse_backup"  # a PostgreSQL role, not a service
DATABASE_BACKUP_PASSWORD = "postgres-backup-password"  # noqa: S105 - the name of a secret, not its value



class BrokerOnAws(Protocol):
    """What the ``BROKER`` provider's aws part offers the others (Amazon MSK)."""

    cluster: Any  # the cluster (its ``arn``)
    bootstrap_brokers: Any  # IAM-authenticated bootstrap brokers (an Output)
    topics: list[Any]  # the platform's topics, made before any client


class MetricsOnAws(Protocol):
    """What the ``METRICS`` provider's aws part offers the others (an Amazon Managed Prometheus workspace)."""

    workspace: Any  # its ``arn`` and ``id``


class DatabaseOnAws(Protocol):
    """What the ``DATABASE`` provider's aws part offers the others (RDS PostgreSQL)."""

    database: Any  # the instance (its ``arn``), which the recovery layer backs up


class SqlEngineOnAws(Protocol):
    """What the ``SQL_ENGINE`` provider's aws part offers the others (Trino on ECS)."""

    coordinator: Any  # the coordinator's ECS service, which the declared tables' task waits for


ALL: tuple[Capability, ...] = (STORE, WAREHOUSE_BUCKET, DATABASE, BROKER, SQL_ENGINE, CHANGE_CAPTURE, BACKUPS,
                                STREAMING_WRITER, REFERENCE_CATALOG, MAINTENANCE, SIGNALS, METRICS)
