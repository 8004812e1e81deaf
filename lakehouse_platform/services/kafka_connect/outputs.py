"""What Kafka Connect adds to the stack outputs and hands its clients: the ``streams`` output, its REST API."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.services.context import Side, url
from lakehouse_platform.services.kafka import config as kafka_config
from lakehouse_platform.services.kafka_connect.config import CONNECT
from lakehouse_platform.services.kafka_connect.smoke import PROFILE


def streams(spec: PlatformSpec) -> dict[str, Any] | None:
    """What the streams run and promise: topics, connectors (kind, topics, table, commit interval), CDC freshness.

    None where no Connect runs (neither the platform's worker nor MSK Connect).
    """
    if CONNECT not in spec.enabled_services() and not (spec.target is Target.AWS and spec.aws.kafka_msk):
        return None
    streams_spec = spec.streams
    connectors = []
    for connector in streams_spec.connectors:
        entry: dict[str, Any] = {"name": connector.name, "kind": connector.kind}
        if connector.kind == "debezium-postgres":
            entry.update(database=connector.database, tables=list(connector.tables), topics=connector.topics,
                         slot=connector.slot, publication=connector.publication)
        else:
            entry.update(topics=list(connector.topics), table=connector.table, cdc=connector.cdc,
                         commit_interval_s=connector.commit_interval_s, commit_timeout_s=connector.timeout_s)
        connectors.append(entry)
    return {
        "topics": [{"name": t.name, "partitions": t.partitions, "doc": t.doc}
                   for t in kafka_config.platform_topics(spec)],
        "connectors": connectors,
        "cdc_visible_within_s": streams_spec.cdc_visible_within_s,
    }


def stack_outputs(spec: PlatformSpec) -> dict[str, Any]:
    """``streams`` wherever Connect runs (``ServiceDefinition.stack_outputs``)."""
    found = streams(spec)
    return {} if found is None else {"streams": found}


def client_profile(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, str]:
    """Where clients on one side reach Connect's REST API."""
    return {"url": url(spec, CONNECT, "rest", side)}


def service_profiles(spec: PlatformSpec) -> dict[str, Any]:
    """Where the platform's services reach Connect's REST API (the ``profiles.services`` output)."""
    return {PROFILE: client_profile(spec, Side.INTERNAL)}
