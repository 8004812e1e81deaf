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

import base64
import hashlib
import json
from pathlib import Path

from infra.artifacts import cache, maven
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.services.context import ServiceContext, Side
from infra.services.definition import ServiceDefinition
from infra.services.plans import ContainerHost, ContainerPlan, NativeHost, NativePlan, jvm_heap_flag, properties
from infra.spec import PlatformSpec, Target, TopicSpec, parse_size

KAFKA = "kafka"
TOPICS_JOB = "kafka-topics"
#: The control topic every Iceberg sink coordinates its commits on (each sink has its own group prefix).
CONTROL_TOPIC = "iceberg-control"
LOCKS = Path(__file__).with_name("streams_locks")
KAFKA_LOCK = LOCKS / "kafka-runtime.lock.json"
IMAGE_HOME = "/opt/kafka"
DATA_DIR_IN_IMAGE = "/var/lib/kafka/data"  # the image's VOLUME

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
    # Measured natively with -Xmx512m: 350-400 MB idle, up to 650 MB after an hour of CDC (findings §5).
    "memory": "1GiB",
    "heap": "512MiB",
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

# -- topics -------------------------------------------------------------------------------------


def platform_topics(spec: PlatformSpec) -> list[TopicSpec]:
    """Every topic the deployment creates: the stack's, each source connector's, the sinks' control topic."""
    streams = spec.streams
    topics = {t.name: t for t in streams.topics}
    for topic in streams.topics_written():
        topics.setdefault(topic, TopicSpec(name=topic, partitions=1,
                                           doc="Debezium change events (JSON with schema) of one table"))
    if streams.sinks():
        topics.setdefault(CONTROL_TOPIC, TopicSpec(name=CONTROL_TOPIC, partitions=1,
                                                   doc="the Iceberg sinks' commit coordination"))
    return list(topics.values())


def topic_configs(topic: TopicSpec) -> dict[str, str]:
    configs = {"cleanup.policy": "compact" if topic.compact else "delete"}
    if topic.retention_hours:
        configs["retention.ms"] = str(topic.retention_hours * 3600 * 1000)
    return configs


def topics_json(spec: PlatformSpec) -> str:
    """The topics as the native post-start task reads them (one JSON document)."""
    return json.dumps([{"name": t.name, "partitions": t.partitions, "configs": topic_configs(t)}
                       for t in platform_topics(spec)], sort_keys=True)


# -- the broker's configuration ------------------------------------------------------------------


def cluster_id(spec: PlatformSpec, stack: str) -> str:
    """A stable KRaft cluster id per platform and stack (22 characters of base64url, as Kafka's are)."""
    digest = hashlib.sha256(f"{spec.name}-{stack}-kafka".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def broker_properties(ctx: ServiceContext, bind_host: str, log_dir: str) -> dict[str, str]:
    """server.properties of the one node: broker and controller, every setting a one-node cluster needs.

    Two client listeners: PLAINTEXT for the platform's services (internal address), HOST for
    clients on the host (external address). Replication factors and min ISR are 1 for the internal
    topics; the transaction log's matter (the Iceberg sink commits with transactional producers,
    whose defaults, 3 and 2, never form on one node).
    """
    port = ctx.listen_port
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{ctx.address(KAFKA, 'controller', Side.INTERNAL)}",
        "listeners": f"PLAINTEXT://{bind_host}:{port('broker')},HOST://{bind_host}:{port('host')}"
                     f",CONTROLLER://{bind_host}:{port('controller')}",
        "advertised.listeners": f"PLAINTEXT://{ctx.address(KAFKA, 'broker', Side.INTERNAL)},"
                                f"HOST://{ctx.address(KAFKA, 'host', Side.EXTERNAL)}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,HOST:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": log_dir,
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "4",
    }


def image_env_name(key: str) -> str:
    """The apache/kafka image's variable for a property: ``_`` -> ``__``, ``-`` -> ``___``, ``.`` -> ``_``.

    With no mounted server.properties the image writes **only** the env-derived properties, so every
    key the broker needs must be one (``log.dirs`` too: its default is /tmp/kafka-logs).
    """
    return "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def jvm_flags(ctx: ServiceContext) -> list[str]:
    """Kafka's own JVM flags (G1 with short pauses), an explicit heap, no JMX port."""
    heap_mb = parse_size(ctx.service.heap or ctx.service.memory) // (1024 * 1024)
    return [f"-Xms{max(heap_mb // 4, 64)}m", f"-Xmx{heap_mb}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:G1PeriodicGCInterval=30000", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]


LOG4J2 = """\
# Console only: the native target appends stdout to the service's log.
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``kafka.Kafka`` on loopback; the log directory is formatted once (setup), topics after every start."""
    assert host.artifact is not None and host.java_home is not None and host.state_dir is not None
    home = host.home
    config, log4j = home / "server.properties", home / "log4j2.properties"
    data = home / "data"
    java = str(host.java_home / "bin" / "java")
    classpath = f"{host.artifact.path}/*"  # java expands the wildcard itself (no shell in between)
    logging = f"-Dlog4j2.configurationFile={log4j}"
    return NativePlan(
        argv=[java, *jvm_flags(ctx), logging, "-cp", classpath, "kafka.Kafka", str(config)],
        files={str(config): properties(broker_properties(ctx, "127.0.0.1", str(data))), str(log4j): LOG4J2},
        env={"JAVA_HOME": str(host.java_home), "PYTHONPATH": str(host.project_root)},
        # --ignore-formatted: an already formatted directory is fine (the marker normally skips this step).
        setup=[[java, "-Xmx256m", logging, "-cp", classpath, "kafka.tools.StorageTool", "format", "--ignore-formatted",
                "--cluster-id", cluster_id(ctx.spec, host.state_dir.name), "--config", str(config)]],
        post_start=[[host.python, "-m", "infra.targets.native.tasks", "create-topics",
                     "--bootstrap", ctx.address(KAFKA, "broker"), "--topics", topics_json(ctx.spec)]],
        # host given: LocalService echoes health with its defaults filled in, and a missing default would diff.
        health={"kind": "tcp", "host": "127.0.0.1", "port": ctx.listen_port("broker")},
        stop_grace_s=30.0,
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The image's env-only configuration: the same properties as natively, data on the image's volume."""
    props = broker_properties(ctx, "", DATA_DIR_IN_IMAGE)  # an empty host binds every interface of the container
    env = {image_env_name(key): value for key, value in props.items()}
    env.update({"CLUSTER_ID": cluster_id(ctx.spec, host.state_dir.name), "KAFKA_HEAP_OPTS": jvm_heap_flag(ctx.service)})
    return ContainerPlan(env=env, volumes={"data": DATA_DIR_IN_IMAGE})


def topics_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Creates each platform topic with the image's kafka-topics.sh (``--if-not-exists``: idempotent)."""
    bootstrap = ctx.address(KAFKA, "broker")
    lines = ["set -e"]
    for topic in platform_topics(ctx.spec):
        configs = " ".join(f"--config {k}={v}" for k, v in topic_configs(topic).items())
        lines.append(f"{IMAGE_HOME}/bin/kafka-topics.sh --bootstrap-server {bootstrap} --create --if-not-exists "
                     f"--topic {topic.name} --partitions {topic.partitions} --replication-factor 1 {configs}")
    # Every kafka-topics.sh is a JVM: a small heap of its own, not the broker's.
    return ContainerPlan(entrypoint=["/bin/bash", "-c"], command=["\n".join(lines)],
                         env={"KAFKA_HEAP_OPTS": "-Xmx128m"})


# -- native artifact: Kafka's classpath from the jar lock ----------------------------------------


def lock() -> maven.JarLock:
    return maven.JarLock.read(KAFKA_LOCK)


def locked_version(jar_lock: maven.JarLock, artifact: str) -> str:
    for jar in jar_lock.jars:
        if jar.coordinate.artifact == artifact:
            return jar.coordinate.version
    raise ArtifactError(f"jar lock {jar_lock.name} has no {artifact}")


def artifact_key(ctx: ServiceContext) -> str:
    return f"kafka:{ctx.service.version}:lock-{lock().digest()[:12]}"


def assemble(key: str, jar_lock: maven.JarLock, out_dir: Path, version: str, notes: list[str]) -> Artifact:
    """Fetch every jar of ``jar_lock`` (verified), hard-link them into ``out_dir``, record the entry."""
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        jars = maven.link_into(maven.fetch_all(jar_lock.jars), out_dir)
        files = {jar.name: cache.file_record(jar) for jar in jars}
        entry = {
            "name": jar_lock.name, "requested": version, "version": version, "path": str(out_dir),
            "root": str(out_dir), "files": files, "sha256": jar_lock.digest(),
            "classpath": [str(j) for j in jars], "source": f"Maven Central, jar lock {jar_lock.name}",
            "notes": notes,
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


def fetch_kafka(ctx: ServiceContext) -> Artifact:
    """Kafka's broker, tools and Connect classpath in one directory (92 jars, 54 MB)."""
    jar_lock = lock()
    version = locked_version(jar_lock, "kafka_2.13")
    if version != ctx.service.version:
        raise ArtifactError(f"{KAFKA_LOCK.name} pins Kafka {version}, the spec pins {ctx.service.version}: "
                            "regenerate the lock for the new pin")
    digest = jar_lock.digest()[:12]
    return assemble(artifact_key(ctx), jar_lock, cache.cache_root() / KAFKA / f"{version}-{digest}" / "libs", version,
                    [f"jar lock {KAFKA_LOCK.name}: {len(jar_lock.jars)} jars"])


SERVICES = (
    ServiceDefinition(
        name=KAFKA, default=KAFKA_DEFAULT, summary="Kafka broker + controller (KRaft, one node)",
        container=container, native=native, java=17,
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_kafka, source="Maven Central (jar lock kafka-runtime)"),
        unavailable={Target.AWS: "on aws Kafka runs as Amazon MSK: set aws.kafka_msk: true instead"},
    ),
    ServiceDefinition(
        name=TOPICS_JOB, default=TOPICS_JOB_DEFAULT, job_of=KAFKA, summary="creates the platform's topics",
        container=topics_job, native_folded="a post-start step of kafka creates the topics",
        unavailable={Target.AWS: "on aws the topics are aws.msk.Topic resources of the MSK cluster"},
    ),
)
