"""Streams as code: the platform's Kafka topics and the Connect connectors a stack declares.

Connectors are typed by the plugin that runs them (the two plugins the platform's Connect worker
carries): a Debezium PostgreSQL source capturing the bookshop's operational tables, and the Iceberg
sink committing a topic into an Iceberg table through the stack's default catalog. The deployment
registers each declared connector (create, update on a changed config, delete on destroy); on aws
the same declarations become MSK Connect connectors.
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakehouse_platform.model.base import SIZE_HELP, Size, Strict, parse_size
from lakehouse_platform.model.layers import Layer
from lakehouse_platform.model.retention import SnapshotRetention

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_CONNECTOR = re.compile(r"^[a-z][a-z0-9-]{1,62}$")
_SQL_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_TABLE_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}\.[a-z_][a-z0-9_]{0,62}$")

#: The bookshop's operational tables the platform creates and seeds (the source side of CDC).
BOOKSHOP_TABLES = ("public.orders",)
#: Connector settings the platform renders itself: set them through the typed fields instead.
#: ``topic.creation.*`` inside a connector is read as topic-creation groups and needs
#: ``topic.creation.default.replication.factor`` (a connector with it alone FAILs); topics are the platform's.
_MANAGED_PREFIXES = ("topic.creation.", "iceberg.catalog.", "iceberg.control.", "database.", "key.converter",
                     "value.converter", "transforms")
_MANAGED_KEYS = ("connector.class", "name", "tasks.max", "topics", "topic.prefix", "iceberg.tables", "slot.name",
                 "publication.name", "publication.autocreate.mode", "plugin.name", "table.include.list",
                 "snapshot.mode", "slot.drop.on.stop")
_CREDENTIAL_KEY = re.compile(r"(password|secret|token|credential|access-key|private)", re.IGNORECASE)


def _extra_config(config: dict[str, str]) -> dict[str, str]:
    for key, value in config.items():
        if key in _MANAGED_KEYS or key.startswith(_MANAGED_PREFIXES):
            raise ValueError(f"config.{key} is rendered by the platform from the connector's typed fields "
                             "(or, for topic.creation.*, the platform's topics); set the typed field instead")
        if _CREDENTIAL_KEY.search(key) and not re.fullmatch(r"\$\{[a-z]+:[^}]+\}", value or ""):
            raise ValueError(f"config.{key} holds a credential in plain text: connector configs are stored in "
                             "Connect's config topic; reference a config provider (${env:NAME}) instead")
    return config


class TopicSpec(Strict):
    """A Kafka topic of the platform, created by the deployment (brokers never auto-create topics)."""

    name: str = Field(description="Topic name (letters, digits, . _ -).")
    partitions: int = Field(default=1, ge=1, le=1000, description="Partitions.")
    compact: bool = Field(default=False, description="cleanup.policy=compact instead of delete.")
    retention_hours: int | None = Field(default=None, ge=1,
                                        description="retention.ms in hours; the broker's default if unset.")
    doc: str = Field(default="", description="What the topic carries (message format).")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _TOPIC.match(value) or value in (".", ".."):
            raise ValueError(f"{value!r} is not a Kafka topic name: 1-249 of letters, digits, '.', '_' and '-'")
        return value


class _Connector(Strict):
    name: str = Field(description="Connector name in Connect (lowercase letters, digits and -).")
    config: dict[str, str] = Field(default_factory=dict,
                                   description="Extra plugin settings merged last (never credentials or "
                                               "what the platform renders).")

    @field_validator("name")
    @classmethod
    def _connector_name(cls, value: str) -> str:
        if not _CONNECTOR.match(value):
            raise ValueError(f"{value!r} is not a connector name: lowercase letters, digits and -, starting with a "
                             "letter, 2-63 characters")
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, str]) -> dict[str, str]:
        return _extra_config(value)


class DebeziumPostgresSpec(_Connector):
    """Debezium's PostgreSQL connector: the bookshop's changes, one topic per table (``<prefix>.<schema>.<table>``).

    The platform owns the publication and the replication slot (the connector never creates them):
    they exist exactly while the connector is declared, because a slot nobody reads retains WAL forever.
    """

    kind: Literal["debezium-postgres"] = Field(description="The plugin: Debezium's PostgreSQL connector.")
    database: Literal["bookshop"] = Field(default="bookshop",
                                          description="The operational database captured (the bookshop's).")
    tables: list[str] = Field(default_factory=lambda: list(BOOKSHOP_TABLES), min_length=1,
                              description=f"schema.table names captured; allowed: {', '.join(BOOKSHOP_TABLES)}.")
    topic_prefix: str = Field(default="bookshop", description="topic.prefix: topics are <prefix>.<schema>.<table>.")
    slot: str = Field(default="bookshop_debezium", description="The logical replication slot (pgoutput).")
    publication: str = Field(default="bookshop_cdc", description="The publication of the captured tables.")
    snapshot_mode: Literal["initial", "no_data", "when_needed", "never", "initial_only"] = Field(
        default="initial", description="Debezium snapshot.mode: initial reads the existing rows once, then the WAL.")
    poll_interval_ms: int = Field(default=500, ge=10, le=60000, description="poll.interval.ms (WAL read batches).")

    @field_validator("tables")
    @classmethod
    def _tables(cls, value: list[str]) -> list[str]:
        for table in value:
            if table not in BOOKSHOP_TABLES:
                raise ValueError(f"{table!r} is not one of the bookshop's tables the platform creates; "
                                 f"allowed: {', '.join(BOOKSHOP_TABLES)}")
        if len(set(value)) != len(value):
            raise ValueError("a table is listed twice")
        return value

    @field_validator("slot", "publication")
    @classmethod
    def _sql_name(cls, value: str) -> str:
        if not _SQL_NAME.match(value):
            raise ValueError(f"{value!r} is not a PostgreSQL name: lowercase letters, digits and _")
        return value

    @field_validator("topic_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,62}", value):
            raise ValueError(f"{value!r} is not a topic prefix: lowercase letters, digits and _")
        return value

    @property
    def topics(self) -> list[str]:
        """The topics this connector writes, one per captured table."""
        return [f"{self.topic_prefix}.{table}" for table in self.tables]


class IcebergSinkSpec(_Connector):
    """The Iceberg Kafka Connect sink: a topic committed into an Iceberg table through the default catalog.

    It commits every ``commit_interval_s`` (the sink's own default is five minutes); with ``cdc`` the
    records are Debezium envelopes, written append-only with a ``_cdc`` struct (op, offset, key).
    """

    kind: Literal["iceberg-sink"] = Field(description="The plugin: the Iceberg Kafka Connect sink.")
    topics: list[str] = Field(min_length=1, description="Topics read (a source connector's, or declared topics).")
    table: str = Field(description="namespace.table written (created on the first commit).")
    cdc: bool = Field(default=True, description="Records are Debezium change events (DebeziumTransform).")
    commit_interval_s: int = Field(default=10, ge=1, le=3600,
                                   description="iceberg.control.commit.interval-ms in seconds (sink default: 300).")
    commit_timeout_s: int | None = Field(
        default=None, ge=1, le=7200,
        description="iceberg.control.commit.timeout-ms in seconds; default 1.5x the interval (an idle sink "
                    "misses the first START_COMMIT after a restart and waits out this timeout).")
    retention: SnapshotRetention = Field(
        default_factory=SnapshotRetention,
        description="Snapshot retention of the sink's table (it commits every commit_interval_s: keep_last is "
                    "derived from it).")

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        if not _TABLE_IDENT.match(value):
            raise ValueError(f"{value!r} is not namespace.table (lowercase letters, digits and _)")
        return value

    @model_validator(mode="after")
    def _timeout(self) -> IcebergSinkSpec:
        if self.commit_timeout_s is not None and self.commit_timeout_s < self.commit_interval_s:
            raise ValueError(f"commit_timeout_s {self.commit_timeout_s} is shorter than commit_interval_s "
                             f"{self.commit_interval_s}: every commit would time out before the workers answer")
        return self

    @property
    def timeout_s(self) -> int:
        """The commit timeout the sink runs with."""
        return self.commit_timeout_s or max(self.commit_interval_s * 3 // 2, self.commit_interval_s + 5)


#: The ``kind`` of each connector model (the discriminator; config error paths leave it out).
CONNECTOR_KINDS = ("debezium-postgres", "iceberg-sink")
ConnectorSpec = Annotated[DebeziumPostgresSpec | IcebergSinkSpec, Field(discriminator="kind")]

ORDERS_TOPIC_DOC = ("plain JSON order events, one object per message, key = order_id as text: "
                    '{"order_id": 1, "customer_id": 42, "book_isbn": "9780000000000", "quantity": 1, '
                    '"unit_price": "12.50", "status": "placed", "order_ts": "2026-03-01T00:00:00.000Z"}')


def _default_topics() -> list[TopicSpec]:
    return [TopicSpec(name="orders", partitions=1, doc=ORDERS_TOPIC_DOC)]


def _default_connectors() -> list[DebeziumPostgresSpec | IcebergSinkSpec]:
    return [
        DebeziumPostgresSpec(kind="debezium-postgres", name="bookshop-cdc"),
        IcebergSinkSpec(kind="iceberg-sink", name="bookshop-iceberg", topics=["bookshop.public.orders"],
                        table="bookshop.orders_cdc"),
    ]


class StreamsSpec(Strict):
    """The platform's topics, its connectors, and the CDC freshness it promises."""

    LAYER: ClassVar[Layer] = Layer.COMPUTE  # the layer its keys belong to (change review)

    topics: list[TopicSpec] = Field(default_factory=_default_topics, description="Topics the platform creates.")
    connectors: list[ConnectorSpec] = Field(default_factory=_default_connectors,
                                            description="Connectors registered on the platform's Connect.")
    retention_hours: int = Field(
        default=168, ge=1, le=87_600,
        description="log.retention.hours: how long the broker keeps a topic's records (a topic's retention_hours "
                    "overrides it); on aws the MSK configuration's.")
    retention_bytes: Size = Field(
        default="1GiB",
        description=f"log.retention.bytes: the most one partition keeps ({SIZE_HELP}); the oldest segments go "
                    "first. On aws the MSK configuration's.")
    segment_bytes: Size = Field(
        default="64MiB",
        description=f"log.segment.bytes ({SIZE_HELP}): retention deletes whole closed segments, so a partition "
                    "holds up to its retention plus one segment.")
    slot_max_wal_keep_size: Size = Field(
        default="1GiB",
        description=f"max_slot_wal_keep_size ({SIZE_HELP}): the most WAL PostgreSQL keeps for a replication slot "
                    "whose reader stopped (Debezium's, while Connect is down); past it the slot is invalidated "
                    "(the connector then snapshots again) instead of the database's disk filling. On aws the RDS "
                    "parameter group's.")
    slot_lag_alert: Size = Field(
        default="256MiB",
        description=f"WAL held for one replication slot ({SIZE_HELP}) that raises ReplicationSlotLagging: its "
                    "reader fell behind or stopped.")
    cdc_visible_within_s: int = Field(
        default=60, ge=5, le=3600,
        description="Promise: a change committed in PostgreSQL is in the Iceberg table within this many seconds "
                    "(checked by the CDC probe).")

    @model_validator(mode="after")
    def _slot_alert_below_its_bound(self) -> StreamsSpec:
        if parse_size(self.slot_lag_alert) >= parse_size(self.slot_max_wal_keep_size):
            raise ValueError(f"slot_lag_alert: {self.slot_lag_alert} is not below slot_max_wal_keep_size "
                             f"{self.slot_max_wal_keep_size}: the slot would be invalidated before anyone is told")
        return self

    @model_validator(mode="after")
    def _consistent(self) -> StreamsSpec:
        names = [t.name for t in self.topics]
        if len(set(names)) != len(names):
            raise ValueError("topics: a topic is declared twice")
        connector_names = [c.name for c in self.connectors]
        for index, name in enumerate(connector_names):
            if name in connector_names[:index]:
                raise ValueError(f"connectors.{index}.name: connector {name!r} is declared twice")
        produced = {topic for c in self.connectors if isinstance(c, DebeziumPostgresSpec) for topic in c.topics}
        slots = [c.slot for c in self.connectors if isinstance(c, DebeziumPostgresSpec)]
        if len(set(slots)) != len(slots):
            raise ValueError("connectors: two Debezium connectors share a replication slot; each needs its own slot")
        known = produced | set(names)
        for index, connector in enumerate(self.connectors):
            if isinstance(connector, IcebergSinkSpec):
                for topic in connector.topics:
                    if topic not in known:
                        raise ValueError(f"connectors.{index}.topics: {topic!r} is neither a declared topic nor "
                                         f"written by a source connector; known: {', '.join(sorted(known))}")
                if connector.commit_interval_s + connector.timeout_s > self.cdc_visible_within_s:
                    raise ValueError(
                        f"connectors.{index}.commit_interval_s: a commit every {connector.commit_interval_s} s "
                        f"(timeout {connector.timeout_s} s) cannot keep cdc_visible_within_s "
                        f"{self.cdc_visible_within_s}: raise the promise or commit more often")
        return self

    def topics_written(self) -> list[str]:
        """Every topic a source connector writes (the deployment creates them before the connector)."""
        return [t for c in self.connectors if isinstance(c, DebeziumPostgresSpec) for t in c.topics]

    def sinks(self) -> list[IcebergSinkSpec]:
        return [c for c in self.connectors if isinstance(c, IcebergSinkSpec)]

    def sources(self) -> list[DebeziumPostgresSpec]:
        return [c for c in self.connectors if isinstance(c, DebeziumPostgresSpec)]
