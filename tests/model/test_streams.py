"""The ``streams`` section of the spec (lakehouse_platform/model/streams.py): a bad connector or topic is refused naming its key, a CDC
source needs the platform's PostgreSQL, one edit turns streams off, the sink's commit timeout default."""

from __future__ import annotations

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from tests.support.stacks import stack_platform

P = "lakehouse:platform"


def _streams(**changes) -> dict:
    platform = stack_platform("native")
    platform["streams"] = changes
    return platform


SINK = {"kind": "iceberg-sink", "name": "sink1", "topics": ["bookshop.public.orders"], "table": "bookshop.t"}
SOURCE_SPEC = {"kind": "debezium-postgres", "name": "src"}

BAD = {
    "unknown plugin": (
        {"connectors": [{"kind": "jdbc-sink", "name": "x"}]},
        f"{P}.streams.connectors.0: 'jdbc-sink' is not allowed; allowed: 'debezium-postgres', 'iceberg-sink'"),
    "a table the bookshop does not have": (
        {"connectors": [{**SOURCE_SPEC, "tables": ["public.customers"]}]},
        f"{P}.streams.connectors.0.tables: 'public.customers' is not one of the bookshop's "
        "tables the platform creates; allowed: public.orders"),
    "a sink on a topic nobody writes": (
        {"connectors": [SOURCE_SPEC, {**SINK, "topics": ["nowhere"]}]},
        f"{P}.streams.connectors.1.topics: 'nowhere' is neither a declared topic nor written by a source "
        "connector; known: bookshop.public.orders, orders"),
    "a commit interval that cannot keep the promise": (
        {"connectors": [SOURCE_SPEC, {**SINK, "commit_interval_s": 300}]},
        f"{P}.streams.connectors.1.commit_interval_s: a commit every 300 s (timeout 450 s) cannot keep "
        "cdc_visible_within_s 60: raise the promise or commit more often"),
    "a timeout shorter than the interval": (
        {"connectors": [SOURCE_SPEC, {**SINK, "commit_interval_s": 20, "commit_timeout_s": 5}]},
        f"{P}.streams.connectors.1: commit_timeout_s 5 is shorter than commit_interval_s 20: every "
        "commit would time out before the workers answer"),
    "topic.creation inside a connector": (
        {"connectors": [{**SOURCE_SPEC, "config": {"topic.creation.enable": "true"}}]},
        f"{P}.streams.connectors.0.config: config.topic.creation.enable is rendered by the "
        "platform from the connector's typed fields (or, for topic.creation.*, the platform's topics); set the typed "
        "field instead"),
    "a plain password in a connector": (
        {"connectors": [{**SOURCE_SPEC, "config": {"signal.kafka.sasl.password": "hunter2"}}]},
        f"{P}.streams.connectors.0.config: config.signal.kafka.sasl.password holds a credential "
        "in plain text: connector configs are stored in Connect's config topic; reference a config provider "
        "(${env:NAME}) instead"),
    "two connectors of one name": (
        {"connectors": [SOURCE_SPEC, {**SOURCE_SPEC, "slot": "other"}]},
        f"{P}.streams.connectors.1.name: connector 'src' is declared twice"),
    "a bad topic name": (
        {"topics": [{"name": "has space"}]},
        f"{P}.streams.topics.0.name: 'has space' is not a Kafka topic name: 1-249 of letters, digits, '.', '_' "
        "and '-'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_streams_config_is_refused_naming_the_key(case):
    streams, expected = BAD[case]
    with pytest.raises(ConfigError) as info:
        load_platform(_streams(**streams), source="Pulumi.native.yaml")
    assert info.value.errors == [expected]


def test_a_cdc_source_needs_the_platforms_postgres():
    platform = stack_platform("native")
    platform["services"]["postgres"] = {"enabled": False}
    platform["services"]["rest-fixture"] = {"depends_on": ["seaweedfs"]}
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert f"{P}.streams.connectors.0: a Debezium source captures the bookshop in the platform's PostgreSQL; " \
           "enable services.postgres or remove the connector" in info.value.errors


def test_streams_are_on_natively_and_one_edit_turns_them_off():
    on = load_platform(stack_platform("native"))
    assert {"kafka", "kafka-topics", "kafka-connect"} <= set(on.enabled_services())
    platform = stack_platform("native")
    platform["services"]["kafka"] = {"enabled": False}
    off = load_platform(platform)
    assert not {"kafka", "kafka-topics", "kafka-connect"} & set(off.enabled_services())


def test_sink_commit_timeout_defaults_to_one_and_a_half_intervals():
    spec = load_platform(_streams(connectors=[SOURCE_SPEC, {**SINK, "commit_interval_s": 30}], cdc_visible_within_s=120))
    assert spec.streams.sinks()[0].timeout_s == 45
