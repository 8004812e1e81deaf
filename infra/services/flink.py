"""Flink: the streaming writer, committing to Iceberg once per checkpoint (compute, streams).

Whole definition: the job manager, the task manager and the streaming job the platform deploys on
them (``flink-orders-job``), plus the init job that hands the lab's checkpoint directory to the
image's user. Every port is pinned (Flink picks random RPC, data and query-service ports by default)
and every process binds loopback natively. One edit turns all of it off: the task manager and the
jobs follow ``services.flink-jobmanager.enabled``.

- docker: the ``flink`` image's ``jobmanager``/``taskmanager`` with ``FLINK_PROPERTIES``, the jars an
  Iceberg job on S3 needs uploaded into ``/opt/flink/lib`` (trap 9 of the streams facts: Hadoop must be
  on the cluster classpath), checkpoints on a bind mount both managers share;
- native: one java process per manager, started the way Flink's scripts start them (JVM memory flags
  from ``BashJavaUtils``, ``infra.targets.native.bash_java_utils``), from the distribution PyPI
  serves as the ``apache-flink-libraries`` sdist plus the jars of ``flink.jars.json``;
- the job, on both: ``infra.targets.flink_job.FlinkJob`` through the job manager's REST API;
- aws: Amazon Managed Service for Apache Flink runs the same job classes (``infra.targets.aws.compute``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from infra import profiles
from infra.artifacts import cache, java, maven, pypi
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.paths import PROJECT_ROOT
from infra.services.base import (
    SECRET_TOKEN,
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    Side,
    StepHost,
    StepPlan,
    secret,
    url,
)
from infra.spec import PlatformSpec, Target

JOBMANAGER = "flink-jobmanager"
TASKMANAGER = "flink-taskmanager"
STATE_INIT = "flink-state-init"
JOB = "flink-orders-job"

MSF = "Amazon Managed Service for Apache Flink"
NOT_ON_AWS_TM = f"on aws {MSF} runs the task managers of the application itself"

# -- the lab (docker) -----------------------------------------------------------------------------
IMAGE_LIB = "/opt/flink/lib"
FLINK_UID = "9999:9999"  # the flink image's user (its Dockerfile: useradd --uid=9999)
LAB_STATE = "/flink-state"  # checkpoints and savepoints, shared by both managers
LAB_STATE_HOST_DIR = "flink/state"  # its host directory, under the stack's state

# -- what runs: the distribution, the extra jars, the job ------------------------------------------
#: Flink release -> the PyPI sdist that is its distribution (``deps/lib``, ``deps/bin``), sha256 pinned.
#: PyPI serves apache-flink-libraries as an sdist only; the sha256 is the one PyPI's JSON API publishes.
DISTRIBUTIONS = {
    "2.1.3": pypi.PinnedSdist("apache-flink-libraries", "2.1.3",
                              "b48d3944755b9303f99d205ea1a9bcb798fc563a872c782393fb466f16d4f91c"),
}
#: The jars of the distribution's lib/ the cluster runs (flink-dist last, as Flink's config.sh orders it).
#: flink-cep is needed although no job uses CEP: the planner loads its classes (NoClassDefFoundError:
#: org/apache/flink/cep/functions/PatternProcessFunction without it). Not kept: flink-scala, flink-csv,
#: flink-connector-files, log4j-layout-template-json, opt/ and plugins/.
LIB_JARS = ("flink-cep", "flink-json", "flink-table-api-java-uber", "flink-table-planner-loader",
            "flink-table-runtime", "log4j-1.2-api", "log4j-api", "log4j-core", "log4j-slf4j-impl")
DIST_JAR = "flink-dist"
UTILS_JAR = "bin/bash-java-utils.jar"
JAR_LOCK = maven.JarLock.read(Path(__file__).with_name("flink.jars.json"))
#: Jars of the lock only a Kafka source uses (the cluster carries them anyway: 10.5 MB, loaded lazily).
KAFKA_JARS = ("flink-connector-kafka", "kafka-clients")
JOB_SOURCE = PROJECT_ROOT / "tools" / "flink-orders-job" / "OrdersToIceberg.java"
JOB_MAIN = "lakehouse.jobs.OrdersToIceberg"
JOB_JAR = "job/orders-to-iceberg.jar"
#: The job's classes run on Flink 2.1 here and on Managed Service for Apache Flink's FLINK-1_20 (Java 11).
JOB_RELEASE = 11

ENTRYPOINTS = {"jobmanager": "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
               "taskmanager": "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"}
RESOURCE_PARAMS = {"jobmanager": "GET_JM_RESOURCE_PARAMS", "taskmanager": "GET_TM_RESOURCE_PARAMS"}
#: Flink's default ``env.java.opts.all`` for Java 17 (its scripts add them; natively we start the JVM).
JAVA17_OPTS = (
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

JOBMANAGER_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Flink job manager: schedules jobs and checkpoints",
    "version": "2.1.3",
    "bundles": {"iceberg": "1.11.0"},  # iceberg-flink-runtime-2.1 on its classpath
    # aws: Managed Service for Apache Flink's FLINK-1_20 (see MSF_RUNTIME: no 2.1 there, Java 11 caps Iceberg).
    "aws_version": "1.20",
    "aws_bundles": {"iceberg": "1.10.1"},
    "image": "flink:2.1.3-java17",
    "ports": {"rest": {"internal": 8081, "external": 8081}, "rpc": {"internal": 6123},
              "blob": {"internal": 6124}, "query": {"internal": 6125}},
    "health": {"kind": "http", "port": "rest", "path": "/overview", "ready_timeout_s": 180},
    "memory": "1280MiB",
    "depends_on": [STATE_INIT],
}

TASKMANAGER_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "role": "Flink task manager: runs the streaming writer's tasks",
    "version": "2.1.3",
    "aws_version": "1.20",
    "image": "flink:2.1.3-java17",
    "ports": {"rpc": {"internal": 6122}, "data": {"internal": 6121}, "query": {"internal": 6126}},
    "health": {"kind": "tcp", "port": "rpc", "ready_timeout_s": 180},
    "memory": "1280MiB",
    # No start-up dependency: it starts beside the job manager and registers once that answers
    # (cluster.registration.error-delay below), which takes a manager's start off the critical path.
    "depends_on": [STATE_INIT],
}

STATE_INIT_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "kind": "job",
    "role": "hands the lab's checkpoint directory to the flink image's user (uid 9999)",
    "version": "2.1.3",
    "aws_version": "1.20",
    "image": "flink:2.1.3-java17",
    "memory": "64MiB",
}

JOB_DEFAULT = {
    "layer": "compute",
    "owner": "streaming",
    "kind": "job",
    "role": "the streaming writer: orders into Iceberg, one commit per checkpoint (settings: flink.job)",
    "version": "2.1.3",
    "aws_version": "1.20",
    "image": "flink:2.1.3-java17",
    "memory": "16MiB",  # runs inside the task manager's budget; nothing of its own
    "depends_on": [JOBMANAGER, TASKMANAGER],
}


# -- the spec's own checks -------------------------------------------------------------------------

#: The smallest Flink process each manager starts in: JVM overhead (192m) and metaspace (256m), then
#: the framework's heap and off-heap memory and the network buffers; a task manager also needs a task heap.
PROCESS_MINIMUM = {JOBMANAGER: 768 * 1024 * 1024, TASKMANAGER: 1024 * 1024 * 1024}


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
    if flink.job.source == "kafka" and spec.target is Target.AWS and not spec.aws.kafka_msk:
        problems.append("flink.job.source: 'kafka' reads the orders topic, but on aws Kafka is Amazon MSK and "
                        "aws.kafka_msk is false; set aws.kafka_msk: true, or use 'generator' or 'auto'")
    elif flink.job.source == "kafka" and spec.target is not Target.AWS and "kafka" not in enabled:
        problems.append("flink.job.source: 'kafka' reads the orders topic, but services.kafka is disabled in this "
                        "stack; enable services.kafka, or use 'generator' or 'auto'")
    if spec.target is not Target.AWS:
        for name, least in PROCESS_MINIMUM.items():
            if name in enabled and spec.services[name].memory_bytes - flink.headroom_bytes < least:
                problems.append(
                    f"services.{name}.memory: {spec.services[name].memory} minus flink.process_headroom "
                    f"{flink.process_headroom} leaves a Flink process under {least // (1024 * 1024)}MiB (JVM "
                    "overhead, metaspace and Flink's framework memory do not fit); raise the budget")
    return problems


# -- configuration shared by every target ----------------------------------------------------------


def job_source(spec: PlatformSpec) -> str:
    """The job's source as it runs: ``kafka`` or ``generator``.

    ``auto`` follows services.kafka (on aws: aws.kafka_msk, Kafka being Amazon MSK there).
    """
    source = spec.flink.job.source
    if source == "auto":
        kafka = spec.aws.kafka_msk if spec.target is Target.AWS else "kafka" in spec.enabled_services()
        return "kafka" if kafka else "generator"
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
    """The Kafka listener the job reads from (the broker's own listener, else its first port)."""
    ports = ctx.spec.services["kafka"].ports
    port = "broker" if "broker" in ports else next(iter(ports))
    return ctx.address("kafka", port, side)


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
    if source == "kafka":
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
        "execution.checkpointing.num-retained": 3,
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
    if "seaweedfs" in spec.enabled_services():
        env.update({"AWS_ACCESS_KEY_ID": secret("s3-access-key"), "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key")})
    return env


# -- docker ----------------------------------------------------------------------------------------


def lab_jars(ctx: ServiceContext) -> list[maven.LockedJar]:
    """The lock's jars a container needs in /opt/flink/lib: all of them, so the cluster runs either source."""
    return list(JAR_LOCK.jars)


def flink_properties(ctx: ServiceContext, role: str) -> str:
    """FLINK_PROPERTIES: ``key: value`` lines the image's entrypoint writes into its config.yaml.

    The entrypoint deletes every whitespace character of a line before splitting it at the first
    colon, so no value may hold a space (none does).
    """
    config = flink_config(ctx, role, f"file://{LAB_STATE}", "0.0.0.0", JOBMANAGER, TASKMANAGER)  # noqa: S104
    for key, value in config.items():
        assert not any(ch.isspace() for ch in str(value)), f"{key}: the entrypoint would strip {value!r}"
    return "\n".join(f"{key}: {value}" for key, value in config.items())


def _container(ctx: ServiceContext, host: ContainerHost, role: str) -> ContainerPlan:
    """The upstream image gets the locked jars uploaded into its lib/; the lab's built image has them already."""
    assert host.artifact is not None
    ext = host.artifact.path / "ext"
    built = ctx.spec.lab.images == "built"
    return ContainerPlan(
        command=[role],
        env={"FLINK_PROPERTIES": flink_properties(ctx, role), **aws_env(ctx.spec)},
        upload_sources={} if built else {f"{IMAGE_LIB}/{j.coordinate.filename}": str(ext / j.coordinate.filename)
                                         for j in lab_jars(ctx)},
        bind_mounts={LAB_STATE_HOST_DIR: LAB_STATE},
    )


def container_jobmanager(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return _container(ctx, host, "jobmanager")


def container_taskmanager(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return _container(ctx, host, "taskmanager")


def container_state_init(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Runs as root once: the shared checkpoint directory, owned by the image's user."""
    return ContainerPlan(
        entrypoint=["sh", "-c"],
        command=[f"mkdir -p {LAB_STATE}/checkpoints {LAB_STATE}/savepoints && chown -R {FLINK_UID} {LAB_STATE}"],
        bind_mounts={LAB_STATE_HOST_DIR: LAB_STATE},
        user="0:0",
    )


# -- native ----------------------------------------------------------------------------------------


def native_state_dir(state_dir: Path) -> Path:
    """Checkpoints and savepoints of the native cluster: under the job manager's home, shared by both."""
    return state_dir / JOBMANAGER / "state"


def native_classpath(ctx: ServiceContext, artifact: Artifact) -> list[str]:
    """The cluster classpath the artifact recorded (the Kafka source's jars included: either source runs)."""
    return [str(p) for p in artifact.classpath]


def _native(ctx: ServiceContext, host: NativeHost, role: str) -> NativePlan:
    """One java process, launched like Flink's scripts do: BashJavaUtils computes the JVM's memory flags."""
    assert host.artifact is not None and host.java_home is not None and host.state_dir is not None
    home, conf = host.home, host.home / "conf"
    state = native_state_dir(host.state_dir)
    config = flink_config(ctx, role, f"file://{state}", "127.0.0.1", "127.0.0.1", "127.0.0.1")
    config.update({"io.tmp.dirs": str(home / "tmp")})
    if role == "jobmanager":
        config.update({"web.tmpdir": str(home / "web-tmp"), "web.upload.dir": str(home / "web-upload")})
    java_bin = str(host.java_home / "bin" / "java")
    dist = host.artifact.path
    utils_cp = ":".join(str(p) for p in (dist / UTILS_JAR, *host.artifact.classpath)
                        if p.name.startswith(("bash-java-utils", DIST_JAR, "log4j-")))
    dirs = [home / "tmp", home / "plugins", state / "checkpoints", state / "savepoints"]
    if role == "jobmanager":
        dirs += [home / "web-tmp", home / "web-upload"]
    argv = [host.python, "-m", "infra.targets.native.bash_java_utils", "--java", java_bin,
            "--classpath", utils_cp, "--conf-dir", str(conf), "--params", RESOURCE_PARAMS[role],
            *(arg for d in dirs for arg in ("--mkdir", str(d))), "--",
            java_bin, "-XX:+IgnoreUnrecognizedVMOptions", "-XX:+ExitOnOutOfMemoryError", *JAVA17_OPTS,
            f"-Dlog4j.configurationFile=file:{conf / 'log4j-console.properties'}", "{jvm-params}",
            "-classpath", ":".join(native_classpath(ctx, host.artifact)), ENTRYPOINTS[role], "--configDir", str(conf),
            *(["--executionMode", "cluster"] if role == "jobmanager" else []), "{dynamic-params}"]
    if role == "jobmanager":
        health: dict[str, Any] = {"kind": "http", "url": ctx.url(JOBMANAGER, "rest", path="/overview"),
                                  "expect_status": 200}
    else:  # its RPC endpoint; registration follows, and the job waits for its slots (FlinkJob: every task RUNNING)
        # host given although it is LocalService's default: the recorded check must equal the input, or every
        # `pulumi up` would see a change and restart the task manager.
        health = {"kind": "tcp", "host": "127.0.0.1", "port": ctx.listen_port("rpc")}
    return NativePlan(
        argv=argv,
        env={**aws_env(ctx.spec), "JAVA_HOME": str(host.java_home), "PYTHONPATH": str(host.project_root),
             "FLINK_CONF_DIR": str(conf), "FLINK_PLUGINS_DIR": str(home / "plugins")},
        files={str(conf / "config.yaml"): yaml.safe_dump(config, sort_keys=False),
               str(conf / "log4j-console.properties"): LOG4J_CONSOLE},
        health=health,
        stop_grace_s=30.0,
    )


def native_jobmanager(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    return _native(ctx, host, "jobmanager")


def native_taskmanager(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    return _native(ctx, host, "taskmanager")


# -- the job (docker and native): a FlinkJob through the job manager's REST API ---------------------


def job_steps(ctx: ServiceContext, host: StepHost) -> list[StepPlan]:
    """The streaming job as a ``FlinkJob``: submitted from the host, its state under its lineage."""
    from infra.layers.base import layer_labels
    from infra.targets.flink_job import FlinkJob

    spec = ctx.spec
    job = spec.flink.job
    assert host.artifact is not None
    if spec.target is Target.DOCKER:
        state_uri = f"file://{LAB_STATE}"
        local = host.state_dir / LAB_STATE_HOST_DIR
    else:
        local = native_state_dir(host.state_dir)
        state_uri = f"file://{local}"
    checkpoint_dir = f"{state_uri}/checkpoints/{lineage(spec)}"
    waits_for = [spec.catalog.default, "seaweedfs"] + (["kafka"] if job_source(spec) == "kafka" else [])
    return [StepPlan(
        name=ctx.name,
        resource=FlinkJob,
        inputs={
            "rest_url": url(spec, JOBMANAGER, "rest", host.side),
            "job_name": job.name,
            "jar_path": str(host.artifact.path / JOB_JAR),
            "jar_digest": host.artifact.sha256,
            "entry_class": JOB_MAIN,
            "program_args": [*job_args(ctx, Side.INTERNAL), "--checkpoint-dir", checkpoint_dir],
            "parallelism": job.parallelism,
            "checkpoint_dir": checkpoint_dir,
            "savepoint_dir": f"{state_uri}/savepoints/{lineage(spec)}",
            "host_paths": {state_uri: str(local)},
            "restore": job.restore,
            "labels": layer_labels(spec, ctx.service.layer, ctx.name),
        },
        after=tuple(waits_for),
        outputs=("job_id", "state", "restored_from", "job_name", "jar_path", "entry_class"),
        export="jobs",
    )]


def job_summary(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, Any]:
    """What clients and probes need to know of the streaming job (no secret)."""
    job = spec.flink.job
    return {"name": job.name, "table": job.table, "source": job_source(spec),
            "checkpoint_interval_s": job.checkpoint_interval_s, "rows_per_second": job.rows_per_second,
            "kafka_topic": job.kafka_topic if job_source(spec) == "kafka" else None,
            "lineage": lineage(spec), "rest": url(spec, JOBMANAGER, "rest", side)}


# -- the artifact: the distribution (PyPI sdist), the locked jars, the compiled job -----------------


def distribution(ctx: ServiceContext) -> pypi.PinnedSdist:
    version = ctx.spec.services[JOBMANAGER].version
    if version not in DISTRIBUTIONS:
        raise ArtifactError(f"no pinned distribution for Flink {version}; add its PyPI sdist sha256 to "
                            f"flink.DISTRIBUTIONS (known: {', '.join(DISTRIBUTIONS)})")
    return DISTRIBUTIONS[version]


def artifact_key(ctx: ServiceContext) -> str:
    """Named by the pins: the distribution, the jar lock and the job's source."""
    version = ctx.spec.services[JOBMANAGER].version
    sdist = DISTRIBUTIONS.get(version)
    job = hashlib.sha256(JOB_SOURCE.read_bytes()).hexdigest()[:12]
    return f"flink:{version}:{(sdist.sha256 if sdist else 'unpinned')[:12]}:lock-{JAR_LOCK.digest()[:12]}:job-{job}"


def _wanted(member: str, version: str) -> str | None:
    """The path under the artifact's home of a sdist member it keeps (lib/ jars, the BashJavaUtils jar)."""
    prefix = f"apache_flink_libraries-{version}/deps/"
    if not member.startswith(prefix):
        return None
    rest = member[len(prefix):]
    if rest == UTILS_JAR:
        return rest
    name = rest.removeprefix("lib/")
    if rest.startswith("lib/") and name.endswith(".jar") and "/" not in name:
        stem = name.rsplit("-", 1)[0]
        if stem in (*LIB_JARS, DIST_JAR):
            return rest
    return None


def fetch_distribution(ctx: ServiceContext) -> Artifact:
    """The cluster's files in the cache: lib/ and bin/ from the sdist, ext/ from Maven, job/ compiled.

    ``classpath`` is the cluster classpath in Flink's order (lib/ sorted, flink-dist last), then the
    Hadoop client, then Iceberg's runtime and AWS bundle, then the Kafka source's jars.
    """
    key = artifact_key(ctx)
    pin = distribution(ctx)
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        home = cache.cache_root() / "flink" / f"{pin.version}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        staging = home.with_name(home.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        sdist = pypi.fetch_sdist(pin)
        cache.console.print(f"[bold]flink[/]: unpacking lib/ and bin/ of {sdist.name}")
        with tarfile.open(sdist, "r|gz") as archive:
            for member in archive:
                target = _wanted(member.name, pin.version)
                if target is None or not member.isfile():
                    continue
                dest = staging / target
                dest.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None
                with open(dest, "wb") as out:
                    while chunk := source.read(cache.CHUNK):
                        out.write(chunk)
        lib = sorted((staging / "lib").glob("*.jar"))
        missing = [n for n in (*LIB_JARS, DIST_JAR) if not any(p.name.rsplit("-", 1)[0] == n for p in lib)]
        if missing or not (staging / UTILS_JAR).is_file():
            raise ArtifactError(f"{sdist.name} lacks {', '.join(missing) or UTILS_JAR}: not Flink's distribution")
        ext = staging / "ext"
        ext.mkdir()
        for locked, jar in zip(JAR_LOCK.jars, maven.fetch_all(JAR_LOCK.jars), strict=True):
            (ext / locked.coordinate.filename).symlink_to(os.path.relpath(jar, ext))
        dist = next(p for p in lib if p.name.startswith(f"{DIST_JAR}-"))
        api = next(p for p in lib if p.name.startswith("flink-table-api-java-uber-"))
        java.compile_jar([JOB_SOURCE], [dist, api], staging / JOB_JAR, release=JOB_RELEASE)
        if home.exists():  # an entry whose files no longer verify: replaced whole
            shutil.rmtree(home)
        os.replace(staging, home)
        lib_final = sorted((home / "lib").glob("*.jar"))
        ordered = [p for p in lib_final if not p.name.startswith(f"{DIST_JAR}-")] + \
                  [p for p in lib_final if p.name.startswith(f"{DIST_JAR}-")]
        order = ("hadoop-client-api", "hadoop-client-runtime", "iceberg-flink-runtime", "iceberg-aws-bundle",
                 *KAFKA_JARS)
        extra = sorted((home / "ext").iterdir(), key=lambda p: next(i for i, n in enumerate(order)
                                                                    if p.name.startswith(n)))
        files = cache.tree_files(home)  # lib/, bin/, job/ (ext/ holds links into the Maven cache)
        files.update({f"ext/{p.name}": cache.file_record(p) for p in extra})
        entry = {
            "name": "flink", "requested": pin.version, "version": pin.version, "path": str(home), "root": str(home),
            "files": files, "sha256": cache.tree_digest(files), "classpath": [str(p) for p in (*ordered, *extra)],
            "source": f"PyPI {pin.project}=={pin.version} (sdist) + Maven Central ({JAR_LOCK.name}) + javac",
            "sdist_sha256": pin.sha256,
            "notes": [f"job {JOB_MAIN} compiled from {JOB_SOURCE.relative_to(PROJECT_ROOT)} (--release {JOB_RELEASE})"],
        }
        cache.record(key, entry)
        sdist.unlink()  # 310 MB; its sha256 stays in the entry (sdist_sha256)
        return cache.artifact_from(entry)


# -- aws: the application jar Managed Service for Apache Flink runs --------------------------------

#: MSK with IAM authentication, as a Kafka consumer sets it (aws-msk-iam-auth is in the application jar).
MSK_IAM_CONSUMER = {
    "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "AWS_MSK_IAM",
    "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
    "kafka.sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
}


def msf_properties(ctx: ServiceContext, secret_arns: dict[str, Any], kafka: Any = None) -> dict[str, Any]:
    """The job's arguments as the application's runtime properties (group ``lakehouse.job``).

    The same arguments as on docker and native, less the state directory (the service keeps checkpoints
    and snapshots itself). A catalog property holding a secret names its Secrets Manager ARN instead
    (``--catalog-secret.<property>``: the job reads it when it starts); values may be Outputs.
    """
    import pulumi

    args = job_args(ctx, Side.INTERNAL, kafka="{kafka}" if kafka is not None else None)
    props: dict[str, Any] = {}
    client = profiles.client_secrets(ctx.spec)
    for key, value in zip(args[::2], args[1::2], strict=True):
        name = key.removeprefix("--")
        if name.startswith("catalog-env."):
            prop = name.removeprefix("catalog-env.")
            template = client[prop]
            names = SECRET_TOKEN.findall(template)
            arns = [pulumi.Output.from_input(secret_arns[n]) for n in names]
            props[f"catalog-secret.{prop}"] = pulumi.Output.all(*arns).apply(_filler(template, names))
        elif value == "{kafka}":
            props[name] = kafka
        else:
            props[name] = value
    if job_source(ctx.spec) == "kafka":
        props.update(MSK_IAM_CONSUMER)
    return props


def _filler(template: str, names: list[str]) -> Callable[[list[str]], str]:
    """``template`` with each secret placeholder as ``{secretsmanager:<its ARN>}``, once the ARNs resolve."""

    def fill(arns: list[str]) -> str:
        table = dict(zip(names, arns, strict=True))
        return SECRET_TOKEN.sub(lambda m: "{secretsmanager:" + table[m.group(1)] + "}", template)

    return fill


#: The runtime MSF offers that Iceberg publishes a Flink runtime for, on a Java its classes load on:
#: MSF's 1.x runtimes are Java 11 and Iceberg 1.11.0's classes are Java 17 (class version 61), so the
#: newest Iceberg for it is 1.10.1; MSF's FLINK-2_2 is Java 17, but Maven Central has no Iceberg runtime
#: for Flink 2.2 (or 2.3), and 2.1's was never built or tested against 2.2.
MSF_RUNTIME = "FLINK-1_20"
MSF_PROPERTY_GROUP = "lakehouse.job"  # the job reads its arguments from this group (OrdersToIceberg)
MSF_LOCK_PATH = Path(__file__).with_name("flink-msf.jars.json")
MSF_LOCK = maven.JarLock.read(MSF_LOCK_PATH)
MSF_ROLES = {j["artifact"]: j["role"] for j in json.loads(MSF_LOCK_PATH.read_text())["jars"]}


def msf_jars(spec: PlatformSpec, *roles: str) -> list[maven.LockedJar]:
    return [j for j in MSF_LOCK.jars if MSF_ROLES[j.coordinate.artifact] in roles]


def msf_key(ctx: ServiceContext) -> str:
    kafka = job_source(ctx.spec) == "kafka"
    job = hashlib.sha256(JOB_SOURCE.read_bytes()).hexdigest()[:12]
    return f"flink-msf:{MSF_RUNTIME}:lock-{MSF_LOCK.digest()[:12]}:job-{job}:{'kafka' if kafka else 'generator'}"


def fetch_msf_jar(ctx: ServiceContext) -> Artifact:
    """The application jar: the job compiled against Flink 1.20's API, bundled with what it needs on MSF."""
    key = msf_key(ctx)
    roles = ("bundle", "kafka") if job_source(ctx.spec) == "kafka" else ("bundle",)
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        out_dir = cache.cache_root() / "flink-msf" / hashlib.sha256(key.encode()).hexdigest()[:12]
        compile_jars = maven.fetch_all(msf_jars(ctx.spec, "compile", "bundle"))
        locked = msf_jars(ctx.spec, *roles)
        bundled = maven.fetch_all(locked)
        job = java.compile_jar([JOB_SOURCE], compile_jars, out_dir / "job-classes.jar", release=JOB_RELEASE)
        cache.console.print(f"[bold]flink-msf[/]: assembling the application jar ({len(bundled)} jars bundled)")
        jar = java.application_jar([job, *bundled], out_dir / "lakehouse-orders-msf.jar", main_class=JOB_MAIN)
        job.unlink()
        entry = {
            "name": "flink-msf", "requested": MSF_RUNTIME, "version": "1.20", "path": str(jar), "root": str(out_dir),
            "files": {jar.name: cache.file_record(jar)}, "sha256": cache.sha256_file(jar), "main_class": JOB_MAIN,
            "source": f"javac + Maven Central ({MSF_LOCK.name}: {', '.join(j.coordinate.filename for j in locked)})",
            "notes": [f"runs on {MSF} {MSF_RUNTIME} (Java 11); Iceberg 1.10.1 (1.11.0 needs Java 17)"],
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


MSF_JAR = ArtifactRecipe(key=msf_key, fetch=fetch_msf_jar,
                         source="javac + Maven Central (flink-msf.jars.json), one application jar")

DIST = ArtifactRecipe(key=artifact_key, fetch=fetch_distribution,
                      source="PyPI apache-flink-libraries (sdist) + Maven Central (flink.jars.json) + javac")

SERVICES = (
    ServiceDefinition(
        name=STATE_INIT, default=STATE_INIT_DEFAULT, job_of=JOBMANAGER,
        summary="hands the lab's checkpoint directory to uid 9999", container=container_state_init,
        native_folded="natively the managers create their state directories themselves",
        managed={Target.AWS: f"{MSF} keeps checkpoints and snapshots itself"},
    ),
    ServiceDefinition(
        name=JOBMANAGER, default=JOBMANAGER_DEFAULT, summary="Flink job manager (checkpoints, scheduling)",
        container=container_jobmanager, native=native_jobmanager, java=java.JAVA_FOR_JVM_SERVICES,
        artifact=DIST, lab_artifact=DIST,
        cloud_artifact=MSF_JAR, cloud_enabled=lambda spec: JOB in spec.enabled_services(),  # MSF runs the job
        managed={Target.AWS: f"{MSF} (runtime {MSF_RUNTIME})"},
        check=check,
    ),
    ServiceDefinition(
        name=TASKMANAGER, default=TASKMANAGER_DEFAULT, job_of=JOBMANAGER,
        summary="Flink task manager (the writer's tasks)", container=container_taskmanager,
        native=native_taskmanager, java=java.JAVA_FOR_JVM_SERVICES, artifact=DIST, lab_artifact=DIST,
        managed={Target.AWS: NOT_ON_AWS_TM},
    ),
    ServiceDefinition(
        name=JOB, default=JOB_DEFAULT, job_of=JOBMANAGER, summary="the streaming writer (orders -> Iceberg)",
        steps=job_steps, artifact=DIST, lab_artifact=DIST,
        managed={Target.AWS: f"the {MSF} application runs the same job classes"},
    ),
)

