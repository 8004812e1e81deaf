"""The Pulumi side: ``FlinkJobProvider`` (create, diff, update, read, delete) and the ``FlinkJob`` resource."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic
from pydantic import ValidationError

from lakehouse_platform.by_value import ByValue, code_changed, is_unknown, known
from lakehouse_platform.services.flink.job.inputs import INPUT_KEYS, REPLACE_KEYS, SUBMIT_KEYS, JobInputs
from lakehouse_platform.services.flink.job.lifecycle import live_state, now, outputs, start, stop, submit
from lakehouse_platform.services.flink.job.lineage import latest_state
from lakehouse_platform.services.flink.rest import ACTIVE_STATES, FlinkRest, FlinkUnreachable


class FlinkJobProvider(ByValue, pulumi.dynamic.ResourceProvider):
    """Dynamic provider of one streaming job per resource (contract: module docstring)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = []
        try:
            JobInputs.model_validate(known(news, INPUT_KEYS))
        except ValidationError as exc:
            unknown = {k for k in INPUT_KEYS if is_unknown(news.get(k))}
            failures = [pulumi.dynamic.CheckFailure(str(e["loc"][0]), str(e["msg"])) for e in exc.errors()
                        if str(e["loc"][0]) not in unknown]
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        spec = JobInputs.from_props(props)
        outputs = start(spec)
        return pulumi.dynamic.CreateResult(spec.job_name, outputs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old, new = known(olds, INPUT_KEYS), known(news, INPUT_KEYS)
        defaults = {name: f.default for name, f in JobInputs.model_fields.items()}
        changed = [k for k in INPUT_KEYS
                   if is_unknown(news.get(k)) or old.get(k, defaults.get(k)) != new.get(k, defaults.get(k))]
        lost = live_state(olds) not in ACTIVE_STATES  # a lost job is resubmitted by the next `pulumi up`
        return pulumi.dynamic.DiffResult(changes=bool(changed) or lost or code_changed(olds, news),
                                         replaces=[k for k in changed if k in REPLACE_KEYS],
                                         stables=[], delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        new = JobInputs.from_props(news)
        old = JobInputs.from_props(olds)
        old_id = str(olds.get("job_id", ""))
        if live_state(olds) in ACTIVE_STATES:
            changed = any(known(olds, INPUT_KEYS).get(k) != known(news, INPUT_KEYS).get(k) for k in SUBMIT_KEYS)
            if not changed:  # only record-only inputs changed
                return pulumi.dynamic.UpdateResult({**outputs(new, old_id, str(olds.get("jar_id", "")),
                                                               str(olds.get("restored_from", "")), "RUNNING"),
                                                    "submitted_at": olds.get("submitted_at", now())})
            savepoint = stop(old, old_id)
            same_lineage = old.checkpoint_dir == new.checkpoint_dir and old.savepoint_dir == new.savepoint_dir
            restore_from = savepoint if same_lineage and new.restore == "latest" and savepoint else None
            if restore_from is None and new.restore == "latest":
                restore_from = latest_state(new.checkpoint_dir, new.savepoint_dir, new.host_paths)
        else:
            restore_from = latest_state(new.checkpoint_dir, new.savepoint_dir, new.host_paths) \
                if new.restore == "latest" else None
            running = FlinkRest(new.rest_url).find(new.job_name)
            if running is not None:  # resubmitted by someone else meanwhile: adopt it
                FlinkRest(new.rest_url).wait_running(str(running["jid"]), new.ready_timeout_s)
                return pulumi.dynamic.UpdateResult(outputs(new, str(running["jid"]), "", "adopted", "RUNNING"))
        job_id, jar_id = submit(new, restore_from)
        return pulumi.dynamic.UpdateResult(outputs(new, job_id, jar_id, restore_from or "", "RUNNING"))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, {**props, "state": live_state(props)})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        spec = JobInputs.from_props(props)
        try:
            location = stop(spec, str(props.get("job_id", "")))
        except FlinkUnreachable:
            pulumi.log.info(f"{spec.job_name}: the job manager does not answer; nothing left to stop")
            return
        if location:
            pulumi.log.info(f"{spec.job_name}: stopped with savepoint {location}")


class FlinkJob(pulumi.dynamic.Resource, module="flink", name="FlinkJob"):
    """One streaming job on a Flink session cluster (contract: module docstring)."""

    job_id: pulumi.Output[str]
    """Flink's id of the running job (it changes on every submit)."""
    jar_id: pulumi.Output[str]
    state: pulumi.Output[str]
    """The job's state as Flink last reported it (``LOST``: Flink does not know the job)."""
    restored_from: pulumi.Output[str]
    """The savepoint or checkpoint the current run resumed from ('' for a fresh start)."""
    submitted_at: pulumi.Output[str]
    job_name: pulumi.Output[str]
    rest_url: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        rest_url: pulumi.Input[str],
        job_name: pulumi.Input[str],
        jar_path: pulumi.Input[str],
        jar_digest: pulumi.Input[str],
        entry_class: pulumi.Input[str],
        program_args: pulumi.Input[Sequence[pulumi.Input[str]]],
        checkpoint_dir: pulumi.Input[str],
        savepoint_dir: pulumi.Input[str],
        parallelism: pulumi.Input[int] = 1,
        host_paths: pulumi.Input[Mapping[str, str]] | None = None,
        restore: pulumi.Input[str] = "latest",
        state_version: pulumi.Input[int] = 1,
        ready_timeout_s: pulumi.Input[float] = 240.0,
        stop_timeout_s: pulumi.Input[float] = 120.0,
        labels: pulumi.Input[Mapping[str, str]] | None = None,
        state_owner: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "rest_url": rest_url, "job_name": job_name, "jar_path": jar_path, "jar_digest": jar_digest,
            "entry_class": entry_class, "program_args": program_args, "parallelism": parallelism,
            "checkpoint_dir": checkpoint_dir, "savepoint_dir": savepoint_dir, "host_paths": host_paths or {},
            "restore": restore, "state_version": state_version, "ready_timeout_s": ready_timeout_s,
            "stop_timeout_s": stop_timeout_s, "state_owner": state_owner,
            "labels": labels or {},
            # Outputs only.
            "job_id": None, "jar_id": None, "state": None, "restored_from": None, "submitted_at": None,
        }
        super().__init__(FlinkJobProvider(), name, props, opts)
