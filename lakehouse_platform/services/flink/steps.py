"""The streaming job on docker and native: a ``FlinkJob`` submitted through the job manager's REST API."""

from __future__ import annotations

from lakehouse_platform.model import Target
from lakehouse_platform.services.capabilities import BROKER, STORE
from lakehouse_platform.services.catalogs import catalog_path
from lakehouse_platform.services.context import ServiceContext, Side, url
from lakehouse_platform.services.flink.artifact import JOB_JAR
from lakehouse_platform.services.flink.config import (
    JOB_MAIN,
    JOB_STATE_VERSION,
    JOBMANAGER,
    KAFKA_SOURCE,
    job_args,
    job_source,
    lineage,
)
from lakehouse_platform.services.flink.container import FLINK_UID, LAB_STATE, LAB_STATE_HOST_DIR
from lakehouse_platform.services.flink.native import native_state_dir
from lakehouse_platform.services.plans import NativeHost, StepHost, StepPlan
from lakehouse_platform.services.registry import needed, registry


def steps(ctx: ServiceContext, host: StepHost) -> list[StepPlan]:
    """The streaming job as a ``FlinkJob``: submitted from the host, its state under its lineage."""
    from lakehouse_platform.layers.base import layer_labels
    from lakehouse_platform.services.flink.job import FlinkJob

    spec = ctx.spec
    job = spec.flink.job
    assert host.artifact is not None
    if spec.target is Target.DOCKER:
        state_uri = f"file://{LAB_STATE}"
        local = host.state_dir / LAB_STATE_HOST_DIR
        owner: str | None = FLINK_UID  # the managers' user: a lineage directory the host makes is handed to it
    else:
        local = native_state_dir(host.state_dir)
        state_uri = f"file://{local}"
        owner = None
    checkpoint_dir = f"{state_uri}/checkpoints/{lineage(spec)}"
    # Through the catalog's gate too: on destroy the job's final savepoint (a commit) goes through it.
    waits_for = [*catalog_path(spec), *(p for p in (registry().provider(spec, STORE),) if p)]
    if job_source(spec) == KAFKA_SOURCE:
        waits_for.append(needed(spec, BROKER, ctx.name))
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
            "state_version": JOB_STATE_VERSION,
            "state_owner": owner,
            "labels": layer_labels(spec, ctx.service.layer, ctx.name),
        },
        after=tuple(waits_for),
        outputs=("job_id", "state", "restored_from", "job_name", "jar_path", "entry_class"),
        export="jobs",
    )]


#: Where the runbook says how to change the job's graph (the refusal names it).
GRAPH_CHANGE_DOC = "docs/operations/upgrades.md#flink"


def in_place(ctx: ServiceContext, host: NativeHost) -> str | None:
    """Refuse a job graph whose savepoints the deployed lineage's state cannot restore into (natively).

    The job resumes from its lineage's newest savepoint or checkpoint with ``allowNonRestoredState`` off, so a
    graph of another ``JOB_STATE_VERSION`` would fail to start after its predecessor was stopped, or (were state
    dropped) write its rows again. ``flink.job.restore: none`` is the operator saying the new graph starts without
    that state.
    """
    from lakehouse_platform.services.flink.job import recorded_graph

    assert host.state_dir is not None
    if ctx.spec.flink.job.restore != "latest":
        return None
    savepoints = native_state_dir(host.state_dir) / "savepoints" / lineage(ctx.spec)
    deployed = recorded_graph(savepoints)
    if deployed is None or deployed == JOB_STATE_VERSION:
        return None
    return (f"services.{ctx.name}: the job's lineage {lineage(ctx.spec)} holds state of job graph version "
            f"{deployed} ({savepoints}); this release's job is version {JOB_STATE_VERSION}, which cannot restore it. "
            f"Either stay on the release that runs version {deployed}, or start the new graph without that state: "
            f"set flink.job.restore: none (the next pulumi up stops the job with a final savepoint, which commits "
            f"what it wrote, then submits the new graph fresh; with the generator source also give the job a new "
            f"flink.job.table, or its order ids start over). See {GRAPH_CHANGE_DOC}.")
