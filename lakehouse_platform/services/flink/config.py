"""Flink's configuration on every target: its pinned ports and memory, the streaming job's arguments (the same
on docker, native and aws), its source and lineage, and the spec's checks.
"""

from __future__ import annotations

import hashlib
from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.placeholders import SECRET_TOKEN, secret
from lakehouse_platform.services import profiles
from lakehouse_platform.services.capabilities import BROKER, STORE
from lakehouse_platform.services.context import ServiceContext, Side, url
from lakehouse_platform.services.plans import IDLE_HEAP_FLAGS
from lakehouse_platform.services.registry import needed, registry

JOBMANAGER = "flink-jobmanager"


TASKMANAGER = "flink-taskmanager"


STATE_INIT = "flink-state-init"


JOB = "flink-orders-job"


MSF = "Amazon Managed Service for Apache Flink"


JOB_MAIN = "lakehouse.jobs.OrdersToIceberg"
#: The version of OrdersToIceberg's job graph and state: raise it with a change of the job whose savepoints the
#: previous graph's cannot restore (an operator's uid or state type, the SQL of the insert). A deployed lineage of
#: another version is refused in preview (``steps.in_place``), never restored into a graph that drops its state.
JOB_STATE_VERSION = 1


ENTRYPOINTS = {"jobmanager": "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
               "taskmanager": "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"}


RESOURCE_PARAMS = {"jobmanager": "GET_JM_RESOURCE_PARAMS", "taskmanager": "GET_TM_RESOURCE_PARAMS"}


#: Flink's default ``env.java.opts.all`` for Java 17 (its scripts add them; natively we start the JVM).
JAVA17_OPTS = (
    *IDLE_HEAP_FLAGS,  # an idle manager hands unused heap back to the OS
    *(f"--add-exports={m}=ALL-UNNAMED" for m in (
        "java.base/sun.net.util", "java.rmi/sun.rmi.registry", "jdk.compiler/com.sun.tools.javac.api",
        "jdk.compiler/com.sun.tools.javac.file", "jdk.compiler/com.sun.tools.javac.parser",
        "jdk.compiler/com.sun.tools.javac.tree", "jdk.compiler/com.sun.tools.javac.util",
        "java.security.jgss/sun.security.krb5")),
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.net", "java.io", "java.nio", "sun.nio.ch", "java.lang.reflect", "java.text", "java.time",
        "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "java.util.concurrent.locks")),
)


# One console log per process: LocalService appends stdout to the service's log file.
LOG4J_CONSOLE = """\
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
"""


#: The smallest Flink process each manager starts in: JVM overhead (192m) and metaspace (256m), then
#: the framework's heap and off-heap memory and the network buffers; a task manager also needs a task heap.
PROCESS_MINIMUM = {JOBMANAGER: 768 * 1024 * 1024, TASKMANAGER: 1024 * 1024 * 1024}


#: The job source that reads the orders topic (a value of ``flink.job.source``, not the broker service).
KAFKA_SOURCE = "kafka"  # not the service: a value of flink.job.source

def check(spec: PlatformSpec) -> list[str]:
    """The job fits its cluster, its source exists, each manager's Flink process fits its budget."""
    enabled = spec.enabled_services()
    if JOBMANAGER not in enabled:
        return []
    flink = spec.flink
    problems = []
    if flink.job.parallelism > flink.task_slots:
        problems.append(f"flink.job.parallelism: {flink.job.parallelism} exceeds flink.task_slots "
                        f"({flink.task_slots}); the job would wait for slots forever")
    if flink.job.source == KAFKA_SOURCE and spec.target is Target.AWS and not spec.aws.kafka_msk:
        problems.append("flink.job.source: 'kafka' reads the orders topic, but on aws Kafka is Amazon MSK and "
                        "aws.kafka_msk is false; set aws.kafka_msk: true, or use 'generator' or 'auto'")
    elif flink.job.source == KAFKA_SOURCE and spec.target is not Target.AWS and \
            registry().provider(spec, BROKER) is None:
        broker = registry().providers(BROKER)[0]
        problems.append(f"flink.job.source: 'kafka' reads the orders topic, but services.{broker} is disabled in this "
                        f"stack; enable services.{broker}, or use 'generator' or 'auto'")
    elif job_source(spec) == KAFKA_SOURCE and flink.job.kafka_topic not in (declared := [t.name for t in
                                                                                  spec.streams.topics]):
        # Brokers never create a topic on first use (auto.create.topics.enable=false): the job would wait forever.
        problems.append(f"flink.job.kafka_topic: {flink.job.kafka_topic!r} is not a topic the stack declares, and the "
                        "broker creates no topic on first use, so the job would wait for it forever; allowed: "
                        f"{', '.join(declared) or 'none'} (streams.topics), or declare it there")
    if spec.target is not Target.AWS:
        for name, least in PROCESS_MINIMUM.items():
            if name in enabled and spec.services[name].memory_bytes - flink.headroom_bytes < least:
                problems.append(
                    f"services.{name}.memory: {spec.services[name].memory} minus flink.process_headroom "
                    f"{flink.process_headroom} leaves a Flink process under {least // (1024 * 1024)}MiB (JVM "
                    "overhead, metaspace and Flink's framework memory do not fit); raise the budget")
    # Its table's retention holds a commit per checkpoint.
    problems += [b.problem for b in spec.table_bounds(flink_job=True).values()
                 if b.problem and b.key == "flink.job.retention"]
    return problems


def job_source(spec: PlatformSpec) -> str:
    """The job's source as it runs: ``kafka`` or ``generator``.

    ``auto`` follows services.kafka (on aws: aws.kafka_msk, Kafka being Amazon MSK there).
    """
    source = spec.flink.job.source
    if source == "auto":
        kafka = spec.aws.kafka_msk if spec.target is Target.AWS else registry().provider(spec, BROKER) is not None
        return KAFKA_SOURCE if kafka else "generator"
    return source


def lineage(spec: PlatformSpec) -> str:
    """The job's lineage: its name plus a digest of its table and source.

    State (checkpoints, savepoints) lives under it, and a resubmitted job restores only from its own
    lineage: another table's or another source's state must never be restored into this job.
    """
    job = spec.flink.job
    digest = hashlib.sha256(f"{job.table}|{job_source(spec)}".encode()).hexdigest()[:8]
    return f"{job.name}-{digest}"


def process_size_mb(ctx: ServiceContext) -> int:
    """The manager's Flink process size: its budget minus the headroom (the container limit stays above it)."""
    return (ctx.service.memory_bytes - ctx.spec.flink.headroom_bytes) // (1024 * 1024)


def kafka_bootstrap(ctx: ServiceContext, side: Side = Side.INTERNAL) -> str:
    """The Kafka listener the job reads from: the broker's listener for the platform's services."""
    return ctx.address(needed(ctx.spec, BROKER, ctx.name), "broker", side)


def catalog_secret_env(spec: PlatformSpec) -> dict[str, str]:
    """Catalog client properties holding a secret, as environment variables of the managers.

    The job reads them in ``main()`` (``--catalog-env.<property> <VAR>``), so the arguments, visible in
    Flink's REST API and the Pulumi state, never hold a secret.
    """
    props = profiles.client_secrets(spec)
    return {catalog_env_var(k): v for k, v in props.items() if SECRET_TOKEN.search(v)}


def catalog_env_var(prop: str) -> str:
    """The environment variable of one catalog client property (``credential``: LAKEHOUSE_CATALOG_CREDENTIAL)."""
    return "LAKEHOUSE_CATALOG_" + "".join(ch if ch.isalnum() else "_" for ch in prop).upper()


def job_args(ctx: ServiceContext, side: Side = Side.INTERNAL, kafka: str | None = None) -> list[str]:
    """The job's arguments (the addresses the job manager and task manager reach); no secret in them.

    ``kafka`` is the bootstrap address where it is not a service of the spec (Amazon MSK on aws).
    """
    spec = ctx.spec
    job = spec.flink.job
    source = job_source(spec)
    args = ["--catalog-uri", profiles.catalog_uri(spec, side), "--warehouse", profiles.warehouse(spec),
            "--region", spec.storage.region, "--table", job.table, "--job-name", job.name,
            "--checkpoint-interval", f"{job.checkpoint_interval_s}s", "--source", source]
    endpoint = profiles.s3_endpoint(spec, side)
    if endpoint:
        args += ["--s3-endpoint", endpoint]
    if source == KAFKA_SOURCE:
        args += ["--kafka-bootstrap", kafka or kafka_bootstrap(ctx, side), "--kafka-topic", job.kafka_topic,
                 "--kafka-group", job.kafka_group]
    else:
        args += ["--rows-per-second", str(job.rows_per_second)]
    props = profiles.client_secrets(spec)
    for key, value in props.items():
        if SECRET_TOKEN.search(value):
            args += [f"--catalog-env.{key}", catalog_env_var(key)]
        else:
            args += [f"--catalog.{key}", value]
    return args


def flink_config(ctx: ServiceContext, role: str, state_uri: str, bind: str, jobmanager_host: str,
                 taskmanager_host: str) -> dict[str, Any]:
    """The Flink configuration of one manager, every port pinned (flat keys; Flink 2 reads them in config.yaml).

    Left at 0, Flink picks random task manager RPC and data ports and query-service ports: nothing
    could health-check them and a firewall could not name them.
    """
    spec = ctx.spec

    def port(service: str, name: str) -> int:
        return ServiceContext(spec, service).listen_port(name)

    config: dict[str, Any] = {
        "jobmanager.rpc.address": jobmanager_host,
        "jobmanager.rpc.port": port(JOBMANAGER, "rpc"),
        "jobmanager.bind-host": bind,
        "jobmanager.execution.failover-strategy": "region",
        "rest.address": jobmanager_host,
        "rest.bind-address": bind,
        "rest.port": port(JOBMANAGER, "rest"),
        "rest.bind-port": str(port(JOBMANAGER, "rest")),
        "blob.server.port": str(port(JOBMANAGER, "blob")),
        "taskmanager.host": taskmanager_host,
        "taskmanager.bind-host": bind,
        "taskmanager.rpc.port": str(port(TASKMANAGER, "rpc")),
        "taskmanager.data.port": port(TASKMANAGER, "data"),
        "taskmanager.numberOfTaskSlots": spec.flink.task_slots,
        # A task manager up before its job manager retries every 10 s by default; the managers start together.
        "cluster.registration.error-delay": "2s",
        "metrics.internal.query-service.port": str(port(JOBMANAGER if role == "jobmanager" else TASKMANAGER,
                                                        "query")),
        "parallelism.default": 1,
        "state.backend.type": "hashmap",
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": f"{state_uri}/checkpoints",
        "execution.checkpointing.savepoint-dir": f"{state_uri}/savepoints",
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": spec.flink.retained_checkpoints,
        "web.checkpoints.history": 100,  # the REST API keeps 10 by default: too few to check commits against
    }
    if role == "jobmanager":
        config["jobmanager.memory.process.size"] = f"{process_size_mb(ServiceContext(spec, JOBMANAGER))}m"
    else:
        config["taskmanager.memory.process.size"] = f"{process_size_mb(ServiceContext(spec, TASKMANAGER))}m"
        config["taskmanager.memory.managed.fraction"] = spec.flink.managed_fraction
    return config


def aws_env(spec: PlatformSpec) -> dict[str, str]:
    """S3 credentials for S3FileIO (the AWS default chain), never in the job's arguments."""
    env = {"AWS_REGION": spec.storage.region, **catalog_secret_env(spec)}
    if registry().provider(spec, STORE) is not None:
        env.update({"AWS_ACCESS_KEY_ID": secret("s3-access-key"), "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key")})
    return env


def job_summary(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, Any]:
    """What clients and probes need to know of the streaming job (no secret)."""
    job = spec.flink.job
    return {"name": job.name, "table": job.table, "source": job_source(spec),
            "checkpoint_interval_s": job.checkpoint_interval_s, "rows_per_second": job.rows_per_second,
            "kafka_topic": job.kafka_topic if job_source(spec) == KAFKA_SOURCE else None,
            "lineage": lineage(spec), "rest": url(spec, JOBMANAGER, "rest", side)}


#: The runtime MSF offers that Iceberg publishes a Flink runtime for, on a Java its classes load on:
#: MSF's 1.x runtimes are Java 11 and Iceberg 1.11.0's classes are Java 17 (class version 61), so the
#: newest Iceberg for it is 1.10.1; MSF's FLINK-2_2 is Java 17, but Maven Central has no Iceberg runtime
#: for Flink 2.2 (or 2.3), and 2.1's was never built or tested against 2.2.
MSF_RUNTIME = "FLINK-1_20"


def service_profiles(spec: PlatformSpec) -> dict[str, Any]:
    """What services next to Flink read (the ``profiles.services`` output): its REST API and job, its catalog DDL."""
    return {"flink": profile(spec, Side.INTERNAL), "flink_sql": profiles.flink_sql(spec)}


def profile(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, Any]:
    """Where Flink's REST API is from one side (submit, status, cancel), and what its streaming job does."""
    summary = job_summary(spec, side)
    if spec.target is Target.AWS:
        summary.pop("rest")
        return {"managed": MSF, "job": summary}
    return {"rest": summary.pop("rest"), "job": summary}
