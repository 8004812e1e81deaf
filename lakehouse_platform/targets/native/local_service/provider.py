"""The Pulumi side: ``LocalServiceProvider`` (create, diff, update, read, delete) and the ``LocalService`` resource."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from lakehouse_platform.providers import PlainBlob, code_changed, is_unknown
from lakehouse_platform.targets.native.local_service.errors import LocalServiceError
from lakehouse_platform.targets.native.local_service.host import remove_files
from lakehouse_platform.targets.native.local_service.inputs import (
    INPUT_KEYS,
    REPLACE_KEYS,
    RESTART_KEYS,
    LogRotation,
    RestartPolicy,
    ServiceInputs,
    input_view,
    validate_props,
)
from lakehouse_platform.targets.native.local_service.lifecycle import (
    now_iso,
    record_of,
    service_outputs,
    start_service,
    stop_service,
)
from lakehouse_platform.targets.native.local_service.processes import process_matches
from lakehouse_platform.targets.native.local_service.spawn import run_pre_stop


class LocalServiceProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Dynamic provider managing one local process per resource (contract: the package docstring)."""

    # Nothing secret is captured when the provider is serialized (it is the package's source),
    # so the blob need not be encrypted in the state.

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = [pulumi.dynamic.CheckFailure(key, why) for key, why in validate_props(news)]
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        spec = ServiceInputs.from_props(props)
        record = start_service(spec)
        return pulumi.dynamic.CreateResult(spec.service, service_outputs(spec, record, now_iso(record.create_time)))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        """Compare inputs by value (``olds`` are the recorded outputs); a dead service is a change.

        So is a new provider blob: the update records it without a restart (``providers.code_changed``).
        """
        old_view, new_view = input_view(olds), input_view(news)
        changed = [key for key in INPUT_KEYS if is_unknown(news.get(key)) or old_view[key] != new_view[key]]
        replaces = [key for key in changed if key in REPLACE_KEYS]
        # Checked live as well, so `pulumi up` restarts a crashed service even without a refresh.
        dead = not process_matches(record_of(olds))
        return pulumi.dynamic.DiffResult(
            changes=bool(changed) or dead or code_changed(olds, news),
            replaces=replaces,
            stables=[],
            delete_before_replace=True,
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        """Restart only when the process depends on what changed, or when it is not running."""
        new_spec = ServiceInputs.from_props(news)
        old_view, new_view = input_view(olds), input_view(news)
        record = record_of(olds)
        needs_restart = not process_matches(record) or any(old_view[k] != new_view[k] for k in RESTART_KEYS)
        if not needs_restart:
            assert record is not None
            return pulumi.dynamic.UpdateResult(service_outputs(new_spec, record, str(olds.get("started_at", ""))))
        old_spec = ServiceInputs.from_props(olds)
        if process_matches(record):
            run_pre_stop(new_spec)
        stop_service(old_spec, record)
        remove_files(set(old_spec.files) - set(new_spec.files))
        new_record = start_service(new_spec)
        return pulumi.dynamic.UpdateResult(service_outputs(new_spec, new_record, now_iso(new_record.create_time)))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """Report whether the recorded process still runs; a dead one reads as ``pid 0, alive false``."""
        if "data_dir" not in props:
            raise LocalServiceError(f"LocalService {id_!r}: cannot be imported, only created by Pulumi")
        spec = ServiceInputs.from_props(props)
        record = record_of(props)
        started_at = str(props.get("started_at", ""))
        alive = record if process_matches(record) else None
        return pulumi.dynamic.ReadResult(id_, service_outputs(spec, alive, started_at))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Stop the process tree; keep ``data_dir`` (the service's state), remove rendered files."""
        spec = ServiceInputs.from_props(props)
        stop_service(spec, record_of(props))
        remove_files(spec.files)


# Secret inputs are encrypted in the state through these outputs (see the package docstring).
SECRET_OUTPUTS = ["env", "files"]


def resource_options(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """``opts`` plus what every LocalService needs: its secret outputs."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS))


class LocalService(pulumi.dynamic.Resource, module="native", name="LocalService"):
    """One platform service running as a local process (contract: the package docstring)."""

    pid: pulumi.Output[int]
    """Pid of the running process (0 when a refresh found it dead)."""
    create_time: pulumi.Output[float]
    """Kernel start time of ``pid``; with it a reused pid is never mistaken for the service."""
    started_at: pulumi.Output[str]
    """ISO 8601 UTC time the current process started."""
    alive: pulumi.Output[bool]
    """False when the last refresh found the process gone."""
    service: pulumi.Output[str]
    data_dir: pulumi.Output[str]
    log_file: pulumi.Output[str]
    ports: pulumi.Output[list[int]]
    service_pid: pulumi.Output[int]
    """Pid of the service itself, under its watchdog (``pid``), at the last up/refresh."""
    restarts: pulumi.Output[int]
    """Restarts the watchdog made since this process was started."""
    supervisor_state: pulumi.Output[str]
    """The watchdog's state: running, backoff, gave-up, stopped."""

    def __init__(
        self,
        name: str,
        *,
        service: pulumi.Input[str],
        argv: pulumi.Input[Sequence[pulumi.Input[str]]],
        cwd: pulumi.Input[str],
        data_dir: pulumi.Input[str],
        log_file: pulumi.Input[str],
        health: pulumi.Input[Mapping[str, Any]],
        env: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        files: pulumi.Input[Mapping[str, pulumi.Input[str]]] | None = None,
        ports: pulumi.Input[Sequence[pulumi.Input[int]]] | None = None,
        health_timeout_s: pulumi.Input[float] = 60.0,
        stop_grace_s: pulumi.Input[float] = 10.0,
        stop_signal: pulumi.Input[str] = "SIGTERM",
        setup: pulumi.Input[Sequence[Sequence[pulumi.Input[str]]]] | None = None,
        post_start: pulumi.Input[Sequence[Sequence[pulumi.Input[str]]]] | None = None,
        pre_stop: pulumi.Input[Sequence[Sequence[pulumi.Input[str]]]] | None = None,
        run_as_user: pulumi.Input[str] | None = None,
        ulimit_nofile: pulumi.Input[int] | None = None,
        restart_policy: pulumi.Input[Mapping[str, Any]] | None = None,
        log_rotation: pulumi.Input[Mapping[str, Any]] | None = None,
        labels: pulumi.Input[Mapping[str, str]] | None = None,
        memory_budget_bytes: pulumi.Input[int] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "service": service,
            "argv": argv,
            "cwd": cwd,
            "data_dir": data_dir,
            "log_file": log_file,
            "health": health,
            "env": env or {},
            "files": files or {},
            "ports": ports or [],
            "health_timeout_s": health_timeout_s,
            "stop_grace_s": stop_grace_s,
            "stop_signal": stop_signal,
            "setup": setup or [],
            "post_start": post_start or [],
            "pre_stop": pre_stop or [],
            "run_as_user": run_as_user,
            "ulimit_nofile": ulimit_nofile,
            "restart_policy": restart_policy or RestartPolicy().model_dump(),
            "log_rotation": log_rotation or LogRotation().model_dump(),
            "labels": labels or {},
            "memory_budget_bytes": memory_budget_bytes,
            # Outputs only: declared so they become attributes of the resource.
            "pid": None,
            "create_time": None,
            "started_at": None,
            "alive": None,
            "service_pid": None,
            "restarts": None,
            "supervisor_state": None,
        }
        super().__init__(LocalServiceProvider(), name, props, resource_options(opts))
