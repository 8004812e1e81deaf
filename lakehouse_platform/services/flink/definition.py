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
  from ``BashJavaUtils``, ``lakehouse_platform.runtime.bash_java_utils``), from the distribution PyPI
  serves as the ``apache-flink-libraries`` sdist plus the jars of ``flink.jars.json``;
- the job, on both: ``lakehouse_platform.services.flink.job.FlinkJob`` through the job manager's REST API
  (``lakehouse_platform.services.flink.rest``);
- aws: Amazon Managed Service for Apache Flink runs the same job classes (``lakehouse_platform.targets.aws.compute``).
"""

from __future__ import annotations

from lakehouse_platform.artifacts import java
from lakehouse_platform.model import Layer
from lakehouse_platform.services.capabilities import BROKER, STREAMING_WRITER
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    AwsPart,
    ClientProfile,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    ServiceDefinition,
)
from lakehouse_platform.services.flink import container, image, native, steps
from lakehouse_platform.services.flink.artifact import artifact_key, fetch_distribution, fetch_msf_jar, msf_key
from lakehouse_platform.services.flink.config import (
    JOB,
    JOBMANAGER,
    MSF,
    MSF_RUNTIME,
    STATE_INIT,
    TASKMANAGER,
    check,
    profile,
    service_profiles,
)
from lakehouse_platform.services.flink.smoke import PROFILE

NOT_ON_AWS_TM = f"on aws {MSF} runs the task managers of the application itself"


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
    # Its Flink process at 768m (the budget less flink.process_headroom): it schedules one job and its checkpoints.
    "memory": "1024MiB",
    # Disk: the job's jar and blobs, its log, the checkpoints' metadata (flink.retained_checkpoints).
    "disk": "512MiB",
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
    # Disk: its log, the task's local state (heap-backed: little).
    "disk": "512MiB",
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


MSF_JAR = ArtifactRecipe(key=msf_key, fetch=fetch_msf_jar,
                         source="javac + Maven Central (flink-msf.jars.json), one application jar",
                         needed=lambda ctx: JOB in ctx.spec.enabled_services())  # MSF runs the job


DIST = ArtifactRecipe(key=artifact_key, fetch=fetch_distribution,
                      source="PyPI apache-flink-libraries (sdist) + Maven Central (flink.jars.json) + javac")


SERVICES = (
    ServiceDefinition(
        name=STATE_INIT, default=STATE_INIT_DEFAULT, job_of=JOBMANAGER,
        summary="hands the lab's checkpoint directory to uid 9999",
        docker=OnDocker(image=image.IMAGE, container=container.state_init),
        native=OnNative(folded="natively the managers create their state directories themselves"),
        aws=OnAws(managed=f"{MSF} keeps checkpoints and snapshots itself"),
    ),
    ServiceDefinition(
        name=JOBMANAGER, default=JOBMANAGER_DEFAULT, summary="Flink job manager (checkpoints, scheduling)",
        title="Flink",
        docker=OnDocker(image=image.IMAGE, container=container.jobmanager, lab_artifact=DIST),
        native=OnNative(process=native.jobmanager, java=java.JAVA_FOR_JVM_SERVICES, artifact=DIST),
        aws=OnAws(managed=f"{MSF} (runtime {MSF_RUNTIME})", upload=MSF_JAR),  # the jar MSF runs
        check=check, profile=ClientProfile(PROFILE, client=profile, services=service_profiles),
        probes=ProbeHooks(smoke=Lazy("lakehouse_platform.services.flink.smoke:smoke"),
                          version=Lazy("lakehouse_platform.services.flink.probe:version"),
                          support="lakehouse_platform.services.flink.probe"), provides=(STREAMING_WRITER,),
    ),
    ServiceDefinition(
        name=TASKMANAGER, default=TASKMANAGER_DEFAULT, job_of=JOBMANAGER,
        summary="Flink task manager (the writer's tasks)",
        docker=OnDocker(image=image.IMAGE, container=container.taskmanager, lab_artifact=DIST),
        native=OnNative(process=native.taskmanager, java=java.JAVA_FOR_JVM_SERVICES, artifact=DIST),
        aws=OnAws(managed=NOT_ON_AWS_TM),
    ),
    ServiceDefinition(
        name=JOB, default=JOB_DEFAULT, job_of=JOBMANAGER, summary="the streaming writer (orders -> Iceberg)",
        docker=OnDocker(lab_artifact=DIST),
        native=OnNative(artifact=DIST, in_place=steps.in_place),
        aws=OnAws(managed=f"the {MSF} application runs the same job classes"),
        steps=steps.steps,
    ),
)

AWS_PARTS = (
    AwsPart(name="flink", layer=Layer.COMPUTE, build=Lazy("lakehouse_platform.services.flink.aws:build"),
            uploads_code=True,
            enabled=Lazy("lakehouse_platform.services.flink.aws:enabled"), after=(BROKER,),
            log_sources=Lazy("lakehouse_platform.services.flink.aws:log_sources")),
)

#: The dynamic resources this package registers (the streaming job's step) -> their providers
#: (``Registry.dynamic_providers``).
PROVIDERS = {"pulumi-python:dynamic/flink:FlinkJob": "lakehouse_platform.services.flink.job.provider:FlinkJobProvider"}
