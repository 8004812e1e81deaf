"""What the provider runs: submit (or adopt) the job, stop it with a savepoint, read its live state."""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi

from lakehouse_platform.services.flink.job.inputs import JobInputs
from lakehouse_platform.services.flink.job.lineage import latest_state, record_graph
from lakehouse_platform.services.flink.rest import ACTIVE_STATES, FlinkJobError, FlinkRest


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def submit(spec: JobInputs, restore_from: str | None) -> tuple[str, str]:
    """Upload (or reuse) the jar and run the job; wait until it runs. (job id, jar id). Cancels on failure."""
    rest = FlinkRest(spec.rest_url)
    jar_id = rest.upload(Path(spec.jar_path), spec.jar_name)
    job_id = rest.run(jar_id, spec.entry_class, spec.program_args, spec.parallelism, restore_from)
    try:
        rest.wait_running(job_id, spec.ready_timeout_s)
    except FlinkJobError:
        with contextlib.suppress(FlinkJobError):
            rest.cancel(job_id, wait_s=30.0)
        raise
    record_graph(spec)
    return job_id, jar_id


def start(spec: JobInputs) -> dict[str, Any]:
    """What create does: adopt the running job of this name, else submit (from the lineage's newest state)."""
    rest = FlinkRest(spec.rest_url)
    running = rest.find(spec.job_name)
    if running is not None:
        job_id = str(running["jid"])
        rest.wait_running(job_id, spec.ready_timeout_s)
        return outputs(spec, job_id, "", "adopted the running job of this name", "RUNNING")
    restore_from = latest_state(spec.checkpoint_dir, spec.savepoint_dir, spec.host_paths) \
        if spec.restore == "latest" else None
    job_id, jar_id = submit(spec, restore_from)
    return outputs(spec, job_id, jar_id, restore_from or "", "RUNNING")


def stop(spec: JobInputs, job_id: str) -> str:
    """Stop-with-savepoint (it commits the last data), else cancel. The savepoint's location, or ''."""
    rest = FlinkRest(spec.rest_url)
    job = rest.job(job_id) if job_id else None
    if job is None or job.get("state") not in ACTIVE_STATES:
        found = rest.find(spec.job_name)
        if found is None:
            return ""
        job_id = str(found["jid"])
    try:
        return rest.stop_with_savepoint(job_id, spec.savepoint_dir, spec.stop_timeout_s)
    except FlinkJobError as exc:
        pulumi.log.warn(f"{spec.job_name}: {exc}; cancelling instead")
        rest.cancel(job_id)
        return ""


def outputs(spec: JobInputs, job_id: str, jar_id: str, restored_from: str, state: str) -> dict[str, Any]:
    return {**spec.model_dump(mode="json"), "job_id": job_id, "jar_id": jar_id, "restored_from": restored_from,
            "state": state, "submitted_at": now()}


def live_state(props: Mapping[str, Any]) -> str:
    """What Flink says of the recorded job now: its state, ``LOST`` (unknown to Flink) or ``UNREACHABLE``."""
    try:
        rest = FlinkRest(str(props.get("rest_url", "")), timeout_s=10.0)
        job = rest.job(str(props.get("job_id", ""))) if props.get("job_id") else None
    except FlinkJobError:
        return "UNREACHABLE"
    return str(job.get("state")) if job else "LOST"
