"""Starting a service: its setup and post-start steps, and the process itself under its watchdog."""

from __future__ import annotations

import contextlib
import datetime as _dt
import inspect
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from lakehouse_platform.runtime import watchdog
from lakehouse_platform.targets.native.local_service.errors import LocalServiceError
from lakehouse_platform.targets.native.local_service.host import (
    UserIds,
    child_env,
    child_identity,
    failure,
    log_event,
    user_ids,
    write_files,
)
from lakehouse_platform.targets.native.local_service.inputs import ServiceInputs
from lakehouse_platform.targets.native.local_service.processes import ProcessRecord, remember_spawned

SETUP_STEP_TIMEOUT_S = 600.0


def _run_steps(spec: ServiceInputs, steps: list[list[str]], what: str) -> None:
    """Run argv steps to completion, output to the service log; a failure raises with the log tail."""
    ids = user_ids(spec.run_as_user)
    env = child_env(spec, ids)
    for index, argv in enumerate(steps, start=1):
        log_event(spec.log_file, f"{what} step {index}/{len(steps)}: {argv[0]}")
        with open(spec.log_file, "ab") as log:
            try:
                done = subprocess.run(
                    argv,
                    cwd=spec.cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    close_fds=True,
                    start_new_session=True,
                    **child_identity(spec, ids),
                    timeout=SETUP_STEP_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                reason = f"{what} step {index} ({argv[0]}) timed out after {SETUP_STEP_TIMEOUT_S:.0f}s"
                raise failure(spec, reason) from None
            except (OSError, subprocess.SubprocessError) as exc:
                reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
                raise failure(spec, f"{what} step {index} ({argv[0]}) could not start: {reason}") from None
        if done.returncode != 0:
            raise failure(spec, f"{what} step {index} ({argv[0]}) failed with exit code {done.returncode}")


def run_setup(spec: ServiceInputs) -> bool:
    """Run the setup steps unless the marker says they already ran; True if they ran now."""
    if not spec.setup or spec.setup_marker.exists():
        return False
    _run_steps(spec, spec.setup, "setup")
    spec.setup_marker.write_text(_dt.datetime.now(_dt.UTC).isoformat() + "\n")
    return True


def run_post_start(spec: ServiceInputs) -> None:
    """Run the post-start steps (idempotent, e.g. create a bucket) once the service is healthy."""
    if spec.post_start:
        _run_steps(spec, spec.post_start, "post-start")


def run_pre_stop(spec: ServiceInputs) -> None:
    """Run the ``pre_stop`` steps before the running process is stopped for an update; best effort: a failing
    step is logged and the update goes on (the service is going down either way)."""
    if not spec.pre_stop:
        return
    try:
        _run_steps(spec, spec.pre_stop, "pre-stop")
    except LocalServiceError as exc:
        log_event(spec.log_file, f"pre-stop failed, stopping anyway: {str(exc).splitlines()[0]}")


def watchdog_python() -> str:
    """The interpreter the watchdog runs on: the base Python behind this one (a venv's ``python`` resolved).

    The watchdog needs only the standard library, so it depends on no virtualenv, and no checkout holding one.
    """
    return os.path.realpath(sys.executable)


def _watchdog_script(spec: ServiceInputs) -> Path:
    """The watchdog's source, written beside the service's data: what runs never depends on a checkout."""
    path = Path(spec.data_dir) / watchdog.SCRIPT_FILE
    write_files({str(path): inspect.getsource(watchdog)})
    return path


def _watchdog_config(spec: ServiceInputs, ids: UserIds | None) -> Path:
    """The watchdog's config (argv may hold secrets: 0600 inside the 0700 data dir; env stays in the environ)."""
    config = {
        "argv": spec.argv, "cwd": spec.cwd, "log_file": spec.log_file, "data_dir": spec.data_dir,
        "restart": spec.restart_policy.model_dump(),
        "log_rotation": spec.log_rotation.model_dump(),
        "stop_signal": spec.stop_signal,
        "identity": {"uid": ids.uid, "gid": ids.gid, "groups": ids.groups} if ids else None,
    }
    path = Path(spec.data_dir) / watchdog.CONFIG_FILE
    write_files({str(path): json.dumps(config)})
    return path


def spawn_service(spec: ServiceInputs) -> ProcessRecord:
    """Start the service under its watchdog, detached, and record the watchdog in ``<data_dir>/.pid``.

    Detached: a new session (no controlling terminal, not in pulumi's process group, so neither
    Ctrl-C nor the exit of the provider process reaches it), stdin from /dev/null, output appended
    to the log, no inherited file descriptors (e.g. the provider's gRPC sockets). The watchdog is the
    session leader and starts the service itself, as ``run_as_user`` (watchdog.py); no health wait.
    """
    ids = user_ids(spec.run_as_user)
    log_event(spec.log_file, f"starting service '{spec.service}': {spec.argv[0]} (+{len(spec.argv) - 1} args)")
    config = _watchdog_config(spec, ids)
    script = _watchdog_script(spec)
    child_identity(spec, ids)  # raises this process's open-files limit; the watchdog and service inherit it
    with open(spec.log_file, "ab") as log:
        try:
            popen = subprocess.Popen(
                [watchdog_python(), str(script), str(config)],
                cwd=spec.cwd,
                env=child_env(spec, ids),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise failure(spec, f"cannot start the watchdog of {spec.argv[0]}: {exc.strerror}") from None
    remember_spawned(popen)
    try:
        record = ProcessRecord(popen.pid, psutil.Process(popen.pid).create_time())
    except psutil.NoSuchProcess:
        # Exited and was reaped already; 0.0 never matches, so it reads as dead right away.
        record = ProcessRecord(popen.pid, 0.0)
    spec.pid_file.write_text(record.to_pid_file())
    return record


def arm_watchdog(record: ProcessRecord) -> None:
    """Tell the watchdog the service is up: from now on it restarts the service when it crashes."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGUSR1)
