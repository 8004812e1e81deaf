"""Kafka Connect (distributed worker) with Debezium's PostgreSQL source and the Iceberg sink (compute, streams).

Whole definition: defaults, the worker's configuration (``worker_properties``: natively a
properties file, on docker the Debezium image's variables), the connectors the stack declares
(``connector_config``: one rendering for every target; credentials are config-provider references
the worker resolves, never values), the bookshop's CDC source in the platform's PostgreSQL
(``source_statements``: schema, sixty thousand seeded orders, the connector's role, the
publication and the replication slot), the deployment steps that register them, the local process,
the container, and the two artifacts: natively Kafka's classpath plus both plugin directories
assembled from jar locks beside this module; for the lab only the Iceberg sink's directory, which
the Debezium image (it carries its own Debezium) mounts as a second plugin.

Where the bookshop's setup lives, and why: it is a deployment step of this service (a typed dynamic
resource, ``PostgresSource``, built by ``lakehouse_platform/targets/deploy_steps.py``), not a post-start step of
PostgreSQL. A replication slot retains WAL for as long as it exists, read or not, so it must exist
exactly while a CDC connector is declared: created before the connector, dropped after the connector
is removed (or streams are turned off). PostgreSQL itself only creates the empty ``bookshop`` database.
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services.capabilities import BROKER, CHANGE_CAPTURE
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    AwsPart,
    ClientProfile,
    Governance,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    RestartDrain,
    ServiceDefinition,
)
from lakehouse_platform.services.kafka import config as kafka
from lakehouse_platform.services.kafka_connect import container, image, native, steps
from lakehouse_platform.services.kafka_connect.artifact import (
    artifact_key,
    fetch_msk_plugins,
    fetch_sink_plugin,
    fetch_worker,
    lab_key,
    msk_enabled,
    msk_key,
)
from lakehouse_platform.services.kafka_connect.config import BOOKSHOP, CDC_SECRET, CONNECT, check
from lakehouse_platform.services.kafka_connect.outputs import client_profile, service_profiles, stack_outputs
from lakehouse_platform.services.kafka_connect.smoke import PROFILE

CONNECT_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Kafka Connect: Debezium's PostgreSQL source and the Iceberg sink (change data capture)",
    "version": "3.6.2",  # Debezium, as the lab image's tag says
    # 3.6.2.Final does not resolve on Maven Central (its parent debezium-build-parent:3.6.2.Final is missing).
    "native_version": "3.6.1",
    "bundles": {"kafka connect": "4.3.0", "iceberg-kafka-connect": "1.11.0"},
    "native_bundles": {"kafka connect": "4.3.1", "iceberg-kafka-connect": "1.11.0"},
    "image": "quay.io/debezium/connect:3.6.2.Final",
    "ports": {"rest": {"internal": 8083, "external": 8083}},
    "health": {"kind": "http", "port": "rest", "path": "/health", "ready_timeout_s": 240,
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8083/health >/dev/null"]},
    # Measured natively: at -Xmx768m RSS reached 1.04 GB during the 60k snapshot, while the live heap
    # after a full GC is ~150 MB with both connectors; 384 MiB keeps the process well inside its budget.
    "memory": "1GiB",
    "heap": "384MiB",
    # Disk: its log (offsets, configs and status live in Kafka).
    "disk": "256MiB",
    # The topics first: brokers never auto-create them, and a source writing to a missing topic fails.
    "depends_on": [kafka.KAFKA, kafka.TOPICS_JOB],
}


#: The packages Connect builds on (a declared dependency): it runs on Kafka's own classpath and logging, writes Kafka's
#: control topic, and follows Kafka's ``enabled`` (a job of it).
USES = ("lakehouse_platform.services.kafka",)


SERVICES = (
    ServiceDefinition(
        name=CONNECT, default=CONNECT_DEFAULT, job_of=kafka.KAFKA,
        summary="Kafka Connect with Debezium's PostgreSQL source and the Iceberg sink", title="Kafka Connect",
        docker=OnDocker(container=container.server, image=image.IMAGE,
                        lab_artifact=ArtifactRecipe(key=lab_key, fetch=fetch_sink_plugin,
                                                    source="Maven Central (jar lock iceberg-kafka-connect)")),
        native=OnNative(process=native.server, java=17,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_worker, source="Maven Central (jar "
                                                "locks: kafka-runtime + two plugin directories)"),
                        # its sources stopped around the broker's restart
                        drains=(RestartDrain(BROKER, native.broker_drain),)),
        # MSK Connect instead, with its custom plugins uploaded where the stack runs it
        aws=OnAws(unavailable="on aws Connect is MSK Connect: set aws.kafka_msk: true instead",
                  upload=ArtifactRecipe(key=msk_key, fetch=fetch_msk_plugins, needed=lambda ctx: msk_enabled(ctx.spec),
                                        source="Maven Central + javac (MSK Connect custom plugins)")),
        governance=Governance(secrets=(CDC_SECRET,)),
        steps=steps.plan, profile=ClientProfile(PROFILE, client=client_profile, services=service_profiles),
        probes=ProbeHooks(smoke=Lazy("lakehouse_platform.services.kafka_connect.smoke:smoke"),
                          version=Lazy("lakehouse_platform.services.kafka_connect.probe:version")),
        stack_outputs=stack_outputs, check=check, provides=(CHANGE_CAPTURE,),
        databases=(BOOKSHOP,),  # the bookshop: the CDC sources' source
    ),
)

AWS_PARTS = (
    AwsPart(name=CONNECT, layer=Layer.COMPUTE, build=Lazy("lakehouse_platform.services.kafka_connect.aws:build"),
            uploads_code=True,
            enabled=lambda spec: spec.aws.kafka_msk, after=(BROKER,),
            log_sources=Lazy("lakehouse_platform.services.kafka_connect.aws:log_sources")),
)

#: The dynamic resources this package registers (its deploy steps) -> their providers: what ``adopt`` hands a recorded
#: resource of each type (``Registry.dynamic_providers``).
PROVIDERS = {
    "pulumi-python:dynamic/streams:Connector": "lakehouse_platform.services.kafka_connect.connectors:ConnectorProvider",
    "pulumi-python:dynamic/streams:PostgresSource":
        "lakehouse_platform.services.kafka_connect.postgres_source:PostgresSourceProvider",
}
