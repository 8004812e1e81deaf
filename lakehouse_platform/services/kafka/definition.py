"""Kafka 4.3.1 in KRaft mode, one node (broker + controller): the platform's event log (compute, streams).

Whole definition: defaults, ``broker_properties`` (the one server configuration every target runs:
natively a ``server.properties`` file, on docker the same keys as the image's ``KAFKA_*`` variables),
the local process (data formatted on first start under the stack's state, listeners on 127.0.0.1,
explicit heap), the container, the topics job (natively a post-start step of the broker), and the
native artifact (Kafka's classpath from a jar lock beside this module). On aws Kafka is Amazon MSK
(``aws.kafka_msk``) and the same topics are ``aws.msk.Topic`` resources.

Topics are the platform's: the broker never auto-creates one (``auto.create.topics.enable=false``),
and the deployment creates every topic a declared connector needs (``platform_topics``) plus the
topics the stack declares (``streams.topics``). The default one, ``orders``, carries plain JSON
order events for the Flink job, one object per message, key = the order id as text::

    {"order_id": 60001, "customer_id": 42, "book_isbn": "9781234567897", "quantity": 2,
     "unit_price": "12.50", "status": "placed", "order_ts": "2026-03-01T08:15:00.000Z"}

``unit_price`` is a decimal string (no float rounding); ``order_ts`` is ISO 8601 UTC with
milliseconds; ``status`` is one of placed, paid, shipped, delivered, cancelled (the bookshop's own
``public.orders`` columns). Producers write UTF-8 JSON without a schema envelope.
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services.capabilities import BROKER
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    AwsIngress,
    AwsPart,
    ClientProfile,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    ServiceDefinition,
)
from lakehouse_platform.services.kafka import container, image, native
from lakehouse_platform.services.kafka.artifact import artifact_key, fetch_kafka
from lakehouse_platform.services.kafka.config import KAFKA, TOPICS_JOB, client_profile, service_profiles
from lakehouse_platform.services.kafka.smoke import PROFILE

KAFKA_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "message broker in KRaft mode, no ZooKeeper",
    "version": "4.3.1",
    "image": "apache/kafka:4.3.1",
    "ports": {"broker": {"internal": 9092}, "host": {"internal": 9094, "external": 9094},
              "controller": {"internal": 9093}},
    # A TCP probe, not kafka-broker-api-versions.sh: that tool starts a second JVM inheriting
    # KAFKA_HEAP_OPTS (the broker's heap) on every check.
    "health": {"kind": "tcp", "port": "broker", "command": ["CMD-SHELL", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9092'"],
               "ready_timeout_s": 180},
    # Measured natively with -Xmx512m: 350-400 MB idle, up to 650 MB after an hour of CDC (findings §5); a broker of
    # a few topics keeps little in its heap (the page cache holds the logs), so 320 MiB.
    "memory": "1GiB",
    "heap": "320MiB",
    # Disk: each partition keeps streams.retention_bytes and a segment (three topics); the internal topics are
    # compacted.
    "disk": "4GiB",
}


TOPICS_JOB_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "kind": "job",
    "role": "creates the platform's topics once the broker is up",
    "version": "4.3.1",
    "image": "apache/kafka:4.3.1",
    "memory": "256MiB",
    "depends_on": [KAFKA],
}


MSK_IAM_PORT = 9098  # MSK's IAM-authenticated TLS listener (fixed by AWS)


SERVICES = (
    ServiceDefinition(
        name=KAFKA, default=KAFKA_DEFAULT, summary="Kafka broker + controller (KRaft, one node)", title="Kafka",
        docker=OnDocker(image=image.IMAGE, container=container.server),
        native=OnNative(process=native.server, java=17,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_kafka,
                                                source="Maven Central (jar lock kafka-runtime)")),
        aws=OnAws(unavailable="on aws Kafka runs as Amazon MSK: set aws.kafka_msk: true instead", ingress=(
            # Amazon MSK's ports, fixed by AWS: 9098 is its IAM-authenticated TLS listener
            AwsIngress("msk", MSK_IAM_PORT, "engines", "Kafka clients (IAM auth, TLS)", back="Kafka clients"),
            AwsIngress("msk", MSK_IAM_PORT, "connect", "Debezium on MSK Connect", back="Debezium writes change events"),
            AwsIngress("msk", 9092, "msk", "broker to broker", to_port=MSK_IAM_PORT),
        )),
        provides=(BROKER,),
        # Two listeners: PLAINTEXT for the platform's services, HOST for clients on the host.
        profile=ClientProfile(PROFILE, client=client_profile, services=service_profiles),
        probes=ProbeHooks(smoke=Lazy("lakehouse_platform.services.kafka.smoke:smoke"),
                          version=Lazy("lakehouse_platform.services.kafka.probe:version")),
    ),
    ServiceDefinition(
        name=TOPICS_JOB, default=TOPICS_JOB_DEFAULT, job_of=KAFKA, summary="creates the platform's topics",
        docker=OnDocker(image=image.IMAGE, container=container.topics_job),
        native=OnNative(folded="a post-start step of kafka creates the topics"),
        aws=OnAws(unavailable="on aws the topics are aws.msk.Topic resources of the MSK cluster"),
    ),
)

AWS_PARTS = (
    AwsPart(name=KAFKA, layer=Layer.COMPUTE, build=Lazy("lakehouse_platform.services.kafka.aws:build"),
            enabled=lambda spec: spec.aws.kafka_msk,
            log_sources=Lazy("lakehouse_platform.services.kafka.aws:log_sources")),
)
