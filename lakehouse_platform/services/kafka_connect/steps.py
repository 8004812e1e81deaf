"""Kafka Connect's deployment steps on docker and native: the CDC source, then the stack's connectors."""

from __future__ import annotations

from lakehouse_platform.model import DebeziumPostgresSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services.capabilities import DATABASE, DATABASE_PASSWORD, DATABASE_USER, STORE
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka_connect.cdc_source import source_statements, teardown_statements
from lakehouse_platform.services.kafka_connect.config import CDC_SECRET, CONNECT, connector_config
from lakehouse_platform.services.plans import StepHost, StepPlan
from lakehouse_platform.services.registry import needed, registry

#: The worker runs exactly-once sources (``worker_properties``); Debezium's PostgreSQL connector supports it, and
#: ``required`` makes Connect refuse the connector rather than run it at least once. (On aws, MSK Connect's worker
#: configuration does not enable it here and its connectors are rendered without this: at least once there.)
EXACTLY_ONCE = {"exactly.once.support": "required"}


def plan(ctx: ServiceContext, host: StepHost) -> list[StepPlan]:
    """The CDC sources, then every declared connector, as the deploying host reaches them."""
    from lakehouse_platform.services.kafka_connect.connectors import Connector
    from lakehouse_platform.services.kafka_connect.postgres_source import PostgresSource

    spec = ctx.spec
    found: list[StepPlan] = []
    rest = ctx.url(CONNECT, "rest", host.side)
    database = registry().provider(spec, DATABASE)
    pg_host, pg_port = ctx.address(database, "pg", host.side).rsplit(":", 1) if database else ("", "0")
    for source in spec.streams.sources():
        found.append(StepPlan(
            name=f"{source.name}-source", resource=PostgresSource,
            inputs={"host": pg_host, "port": int(pg_port), "database": source.database, "user": DATABASE_USER,
                    "password": secret(DATABASE_PASSWORD), "apply": source_statements(source),
                    "teardown": teardown_statements(source), "params": {"cdc_password": secret(CDC_SECRET.name)},
                    "slot": source.slot},
            after=(needed(spec, DATABASE, ctx.name),),
        ))
    sink_needs = tuple(n for n in (*default_catalog(spec).path, registry().provider(spec, STORE))
                       if n and ctx.enabled(n))
    for connector in spec.streams.connectors:
        cdc = isinstance(connector, DebeziumPostgresSpec)
        found.append(StepPlan(
            name=f"connector-{connector.name}", resource=Connector,
            # A source's offsets point into its slot, which its source step drops: they go with the connector.
            inputs={"name": connector.name, "connect_url": rest, "config": {**connector_config(ctx, connector),
                                                                              **(EXACTLY_ONCE if cdc else {})},
                    "reset_offsets_on_delete": cdc},
            after=(f"{connector.name}-source", needed(spec, DATABASE, ctx.name)) if cdc else sink_needs,
            outputs=("last_action",), export="connectors",
        ))
    return found
