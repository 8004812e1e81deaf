"""What the provider calls: start a service (create), stop it (delete), and what it reports (outputs)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import signal
from collections.abc import Mapping
from typing import Any

from lakehouse_platform.runtime import watchdog
from lakehouse_platform.targets.native.local_service.health import wait_healthy
from lakehouse_platform.targets.native.local_service.host import log_event, prepare_dirs, user_ids, write_files
from lakehouse_platform.targets.native.local_service.inputs import ServiceInputs
from lakehouse_platform.targets.native.local_service.ports import ensure_ports_free
from lakehouse_platform.targets.native.local_service.processes import ProcessRecord, process_matches, stop_process_tree
from lakehouse_platform.targets.native.local_service.spawn import arm_watchdog, run_post_start, run_setup, spawn_service


def now_iso(epoch: float) -> str:
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).isoformat(timespec="seconds")


def stop_service(spec: ServiceInputs, record: ProcessRecord | None) -> list[int]:
    """Stop what is known of the service: the given record and the one in ``.pid``; remove ``.pid``."""
    signalled: list[int] = []
    records = {r for r in (record, ProcessRecord.from_pid_file(spec.pid_file)) if r is not None and r.pid > 0}
    for rec in records:
        pids = stop_process_tree(rec, spec.stop_grace_s, signal.Signals[spec.stop_signal])
        if pids:
            log_event(spec.log_file, f"stopped service '{spec.service}' (pids {pids})")
        signalled += pids
    with contextlib.suppress(FileNotFoundError):
        spec.pid_file.unlink()
    return signalled


def start_service(spec: ServiceInputs) -> ProcessRecord:
    """Everything create does: ports, dirs, files, setup, spawn, health. Stops the process on failure."""
    ids = user_ids(spec.run_as_user)
    prepare_dirs(spec, ids)
    # Only an interrupted run can leave a live process in .pid behind our back (see module doc).
    orphan = ProcessRecord.from_pid_file(spec.pid_file)
    if orphan is not None and process_matches(orphan):
        stop_service(spec, orphan)
    ensure_ports_free(spec.service, spec.ports)
    write_files(spec.files, owner=spec.run_as_user)
    run_setup(spec)
    record = spawn_service(spec)
    try:
        wait_healthy(spec, record)
        run_post_start(spec)
        arm_watchdog(record)
    except BaseException:
        # Never leave a half-started process behind: Pulumi records nothing for a failed create.
        stop_service(spec, record)
        raise
    log_event(spec.log_file, f"service '{spec.service}' is healthy (pid {record.pid})")
    return record


def service_outputs(spec: ServiceInputs, record: ProcessRecord | None, started_at: str) -> dict[str, Any]:
    alive = record is not None and record.pid > 0
    supervised = watchdog.read_status(spec.data_dir)
    return {
        **spec.to_props(),
        "pid": record.pid if record is not None and alive else 0,
        "create_time": record.create_time if record is not None and alive else 0.0,
        "started_at": started_at,
        "alive": alive,
        # The watchdog's view (watchdog.py): the service's own pid, restarts since this start, its state.
        "service_pid": int(supervised.get("pid") or 0) if alive else 0,
        "restarts": int(supervised.get("restarts") or 0),
        "supervisor_state": str(supervised.get("state") or "unknown") if alive else "stopped",
    }


def record_of(props: Mapping[str, Any]) -> ProcessRecord | None:
    pid = props.get("pid") or 0
    if not pid or props.get("alive") is False:
        return None
    return ProcessRecord(int(pid), float(props.get("create_time") or 0.0))
