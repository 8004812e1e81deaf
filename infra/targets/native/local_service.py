"""``LocalService``: a Pulumi dynamic resource that runs one platform service as a local process.

The ``native`` target runs every platform service (postgres, trino, ...) as a real process on
127.0.0.1. This module is the one place that knows how to start, health-check, restart and stop
such a process, so that ``pulumi up`` / ``refresh`` / ``destroy`` manage processes the same way
they manage cloud resources.

Layout
------
* Plain functions (``ensure_ports_free``, ``spawn_service``, ``wait_healthy``,
  ``stop_process_tree``, ``tail_log``, ...) hold all the process logic. They know nothing about
  Pulumi and are unit-tested directly against real processes.
* ``LocalServiceProvider`` maps the Pulumi CRUD calls onto those functions.
* ``LocalService`` is the resource that Pulumi programs instantiate.

Lifecycle contract
------------------
create
    Refuse if any declared port is already bound on 127.0.0.1 (the error names the owning pid and
    command when it can be found). Create ``data_dir`` (mode 0700) and the log directory, write
    ``files`` (mode 0600, atomically), run the ``setup`` steps once (see below), then spawn the
    process detached (own session, stdin from /dev/null, stdout+stderr appended to ``log_file``)
    so it outlives ``pulumi up``. ``<data_dir>/.pid`` records ``"<pid> <create_time>"`` (first
    token is the pid, so shell tools can read it). Then wait for the health check; if the process
    exits or stays unhealthy for ``health_timeout_s``, it is stopped and the error carries the
    service name, the reason and the last 40 lines of its log.

    A live process recorded in ``<data_dir>/.pid`` while Pulumi has no record of the resource can
    only be an orphan of an interrupted run (Ctrl-C during a create), so create stops it first
    instead of failing on its ports forever.

setup
    Each ``setup`` argv (e.g. ``initdb``) runs once, before the first start, only while the marker
    ``<data_dir>/.local-service-setup-done`` is missing; its output goes to the log. Editing the
    ``setup`` list later does not re-run it (the marker is there): delete the marker (or the data
    dir) to run it again. Tools that insist on an empty directory (``initdb``) must be pointed
    at a sub-directory of ``data_dir``, because ``.pid`` and the marker live in ``data_dir``.

post_start
    Each ``post_start`` argv runs after every healthy start (create and restart), e.g. creating
    the warehouse bucket. Steps must be idempotent; a failing step stops the service and raises
    with the log tail, like a failed health check.

delete
    ``stop_signal`` (SIGTERM unless the service asks for another) to the process group and to
    every process of the service (its recursive children and every process still in its session,
    which catches double-forked daemons), wait ``stop_grace_s``, then SIGKILL whatever is left,
    then wait for the pids to be released. Processes are never matched by name, and a pid only
    counts as ours when its create_time matches the recorded one, so a reused pid is never
    signalled. The managed ``files`` (rendered config, possibly holding secrets) and ``.pid`` are
    removed. **``data_dir`` is kept**: it is the service's state (databases, catalogs), and
    destroying a stack must not destroy data; remove it by hand for a clean slate.

update (diff)
    Updates never replace the resource (so other services are not touched), except for identity
    changes: a new ``data_dir`` or ``service`` name is a replacement, deleting the old process
    before starting the new one (they would share ports). A change of anything the running process
    depends on (``argv``, ``env``, ``files``, ``health``, ``ports``, ``cwd``, ``log_file``,
    ``run_as_user``, ``ulimit_nofile``) restarts only this service: stop, rewrite files, start,
    wait healthy. ``health_timeout_s``, ``stop_grace_s`` and ``setup`` are recorded without a
    restart. Identical inputs give no diff, so a second ``pulumi up`` changes nothing. Values are
    compared after normalisation (protobuf turns ints into floats, secrets arrive unwrapped), so
    secrets compare by value.

refresh (read) of a dead service
    ``read`` checks the recorded pid *and* its create_time. If the process is gone (or the pid now
    belongs to another process), it reports ``alive: false`` and ``pid: 0`` (``started_at`` keeps
    the time of the last start), so ``pulumi refresh`` shows the drift. Any diff whose old state
    says ``alive: false`` is a change, so the next ``pulumi up`` restarts the service in place.
    ``diff`` also checks the recorded pid itself, so ``pulumi up`` converges (restarts a crashed
    service) even without a refresh; refresh is still what makes the drift visible in the state.
    The restart path stops whatever is left of the old process (including processes still in its
    session, found through ``.pid``) before starting a new one.

Secrets
    ``env`` values and ``files`` contents may be Pulumi secrets. The resource marks ``env`` and
    ``files`` as ``additional_secret_outputs`` so they are encrypted in the state. Neither is ever
    written to the log or put into an error message; the log headers name only the executable
    (``argv`` may hold secrets too, e.g. a password flag).

Environment
    The process gets a small fixed base environment (``INHERITED_ENV_VARS`` from the provider's
    own environment) plus ``env``. It deliberately does not inherit the whole environment of
    ``pulumi``, which holds e.g. ``PULUMI_CONFIG_PASSPHRASE``.

Serialization
    Pulumi serializes a dynamic provider with dill. dill pickles a class that lives in an
    importable module *by reference*, which would make the provider process (started by the
    Pulumi engine, whose ``sys.path`` does not know this repository) fail to import it.
    ``LocalServiceProvider.__reduce__`` therefore ships the source of this module by value; the
    provider process executes it as a private module (``infra/by_value.py``). The serialized blob
    is deterministic and only changes when this file changes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.util
import json
import os
import pwd
import resource
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import psutil
import pulumi
import pulumi.dynamic
import requests
import tenacity
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from infra.by_value import is_unknown, known, plain, poll

# The watchdog that runs each service (watchdog.py beside this file). Loaded by path, not imported:
# the provider process runs this module's source without the repository on sys.path.
WATCHDOG = Path(__file__).with_name("watchdog.py")
_watchdog_spec = importlib.util.spec_from_file_location("_lakehouse_native_watchdog", WATCHDOG)
assert _watchdog_spec is not None and _watchdog_spec.loader is not None
watchdog = importlib.util.module_from_spec(_watchdog_spec)
_watchdog_spec.loader.exec_module(watchdog)

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

LOOPBACK = "127.0.0.1"
PID_FILE_NAME = ".pid"
SETUP_MARKER_NAME = ".local-service-setup-done"
LOG_TAIL_LINES = 40
SETUP_STEP_TIMEOUT_S = 600.0
# After SIGKILL a process is gone within milliseconds unless it is stuck in the kernel (D state).
KILL_WAIT_S = 5.0
# Each single health probe is bounded, so one hung request cannot eat the whole health timeout.
MAX_PROBE_TIMEOUT_S = 2.0
# create_time is derived from boot time + start ticks; compare with a small tolerance so a
# float that went through JSON/protobuf still matches, while a reused pid (started later) never does.
CREATE_TIME_TOLERANCE_S = 0.01
# The only variables a service inherits from the provider's environment (see module docstring).
INHERITED_ENV_VARS = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "JAVA_HOME")

# Inputs whose change needs a restart of the running process.
RESTART_KEYS = (
    "restart_policy",
    "argv", "env", "files", "health", "ports", "cwd", "log_file", "run_as_user", "ulimit_nofile", "post_start",
    "stop_signal",
)
# Inputs that define which service this is; a change is a replacement.
REPLACE_KEYS = ("service", "data_dir")
# Inputs that are only recorded.
RECORD_ONLY_KEYS = ("health_timeout_s", "stop_grace_s", "setup", "labels", "memory_budget_bytes", "pre_stop")
INPUT_KEYS = REPLACE_KEYS + RESTART_KEYS + RECORD_ONLY_KEYS

HEALTH_KINDS = ("http", "tcp", "command")


class LocalServiceError(Exception):
    """A service could not be started, checked or stopped; the message is meant for the operator."""


class HealthPending(Exception):
    """One health probe failed; the service may still become healthy (retried)."""


class ServiceExited(LocalServiceError):
    """The service process died while we were waiting for it to become healthy (not retried)."""


# --------------------------------------------------------------------------------------------
# Input model
# --------------------------------------------------------------------------------------------


def _absolute(path: str) -> str:
    if not os.path.isabs(path):
        raise ValueError("must be an absolute path")
    return path


AbsolutePath = Annotated[str, AfterValidator(_absolute)]
Argv = Annotated[list[str], Field(min_length=1)]


class _Health(BaseModel):
    model_config = ConfigDict(extra="allow")


class HttpHealth(_Health):
    """GET must answer ``expect_status``; with ``json_field`` the JSON body's field must equal
    ``json_expect`` if given, else be truthy (Trino: ``json_field="starting", json_expect=False``)."""

    kind: Literal["http"]
    url: Annotated[str, Field(pattern=r"^https?://")]
    expect_status: int = 200
    json_field: str | None = None


class TcpHealth(_Health):
    """A TCP connect succeeds."""

    kind: Literal["tcp"]
    host: str = LOOPBACK
    port: Annotated[int, Field(ge=1, le=65535)]


class CommandHealth(_Health):
    """The command exits 0 (e.g. ``pg_isready``)."""

    kind: Literal["command"]
    argv: Argv


HealthCheck = Annotated[HttpHealth | TcpHealth | CommandHealth, Field(discriminator="kind")]


class RestartPolicy(BaseModel):
    """How the watchdog restarts a service that crashed after it was up (see watchdog.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_restarts: Annotated[int, Field(ge=0)] = 5
    window_s: Annotated[float, Field(gt=0)] = 300.0
    backoff_initial_s: Annotated[float, Field(gt=0)] = 1.0
    backoff_max_s: Annotated[float, Field(gt=0)] = 30.0


class ServiceInputs(BaseModel):
    """Validated, typed inputs of one local service (the resource's properties)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    service: Annotated[str, Field(min_length=1)]
    argv: Argv
    cwd: AbsolutePath
    data_dir: AbsolutePath
    log_file: AbsolutePath
    health: HealthCheck
    env: dict[str, str] = {}
    files: dict[AbsolutePath, str] = {}
    ports: list[Annotated[int, Field(ge=1, le=65535)]] = []
    setup: list[Argv] = []
    post_start: list[Argv] = []
    # Run before the process stops for an update (drain it: Flink's managers stop the job with a savepoint first).
    pre_stop: list[Argv] = []
    health_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    stop_grace_s: Annotated[float, Field(ge=0)] = 10.0
    # The signal that asks the service to stop cleanly (PostgreSQL: SIGINT, its fast shutdown).
    stop_signal: Literal["SIGTERM", "SIGINT"] = "SIGTERM"
    run_as_user: str | None = None
    ulimit_nofile: Annotated[int, Field(gt=0)] | None = None
    restart_policy: RestartPolicy = RestartPolicy()
    # Recorded for reviewers and the policy pack (layer, owner; the service's memory budget).
    labels: dict[str, str] = {}
    memory_budget_bytes: int | None = None

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> ServiceInputs:
        """Build from Pulumi properties; raises ``LocalServiceError`` listing every invalid input."""
        problems = validate_props(props)
        if problems:
            name = props.get("service", "?")
            raise LocalServiceError(
                f"service '{name}': invalid inputs: " + "; ".join(f"{k}: {why}" for k, why in problems)
            )
        return cls.model_validate(known(props, INPUT_KEYS))

    def to_props(self) -> dict[str, Any]:
        """The inputs as plain properties (the part of the outputs that echoes the inputs)."""
        props = self.model_dump(mode="json")
        props["health"] = self.health_check
        return props

    @property
    def health_check(self) -> dict[str, Any]:
        """The health check as the probe reads it (keys given, e.g. ``json_expect: false``, are kept)."""
        return self.health.model_dump(exclude_none=True)

    @property
    def pid_file(self) -> Path:
        return Path(self.data_dir) / PID_FILE_NAME

    @property
    def setup_marker(self) -> Path:
        return Path(self.data_dir) / SETUP_MARKER_NAME


def _reason(error: Any) -> str:
    if error["type"] == "union_tag_invalid":
        return f"unknown kind {error['input'].get('kind')!r}, expected one of {', '.join(HEALTH_KINDS)}"
    return str(error["msg"]).removeprefix("Value error, ")


def validate_props(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the inputs as ``(property, reason)``; values not known yet are skipped."""
    unknown = {k for k in INPUT_KEYS if is_unknown(props.get(k))}
    try:
        ServiceInputs.model_validate(known(props, INPUT_KEYS))
    except ValidationError as exc:
        problems: dict[str, str] = {}
        for error in exc.errors():
            key = str(error["loc"][0])
            if key not in unknown:
                problems.setdefault(key, _reason(error))
        return list(problems.items())
    return []


def input_view(props: Mapping[str, Any]) -> dict[str, Any]:
    """The resource inputs found in ``props`` (inputs or outputs), normalized, defaults filled in."""
    defaults = {name: field.default.model_dump() if isinstance(field.default, BaseModel) else field.default
                for name, field in ServiceInputs.model_fields.items()}
    return {key: plain(props.get(key, defaults.get(key)), drop_none=True) for key in INPUT_KEYS}


# --------------------------------------------------------------------------------------------
# Process identity
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessRecord:
    """A process identity that survives pid reuse: pid plus the kernel's start time."""

    pid: int
    create_time: float

    def to_pid_file(self) -> str:
        # "<pid> <create_time>": the first token is the pid, like any pid file.
        return f"{self.pid} {self.create_time!r}\n"

    @classmethod
    def from_pid_file(cls, path: Path) -> ProcessRecord | None:
        """The record in ``path``, or None when it is missing or unreadable."""
        try:
            pid_text, ctime_text = path.read_text().split()[:2]
            return cls(int(pid_text), float(ctime_text))
        except (OSError, ValueError):
            return None


# Popen handles of the processes this Python process spawned. Keeping them lets us reap our own
# exited children (no zombies while a test or the provider process lives on) and report exit
# codes; the processes themselves are detached and do not depend on these objects.
_SPAWNED: dict[int, subprocess.Popen] = {}
_SPAWNED_LOCK = threading.Lock()


def _reap(pid: int) -> int | None:
    """Collect the exit status of ``pid`` if we spawned it and it exited; its return code or None.

    Only processes from ``_SPAWNED``: a bare ``waitpid`` would steal the status of a child that
    other code in this process (a test, a Popen elsewhere) is waiting for.
    """
    with _SPAWNED_LOCK:
        popen = _SPAWNED.get(pid)
    return popen.poll() if popen is not None else None


def _threads_exited(pid: int) -> bool:
    """True when every thread of ``pid`` is a zombie or dead.

    The main thread of a multi-threaded process turns zombie while its other threads are still
    exiting, and only the last thread releases the process's files, including listening sockets.
    Counting such a process as gone would report a port free that is not free yet.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            stat_line = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue  # that thread is gone
        if stat_line.rpartition(")")[2].split()[0] not in ("Z", "X"):
            return False
    return True


def _running(proc: psutil.Process) -> bool:
    """True while ``proc`` runs; a zombie whose threads have all exited counts as gone."""
    try:
        if proc.status() == psutil.STATUS_ZOMBIE:
            if not _threads_exited(proc.pid):
                return True
            _reap(proc.pid)
            return False
        return proc.is_running()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True


def process_matches(record: ProcessRecord | None) -> bool:
    """True when the recorded process is running (same pid *and* same create_time, not a zombie)."""
    if record is None or record.pid <= 0:
        return False
    try:
        proc = psutil.Process(record.pid)
        if abs(proc.create_time() - record.create_time) > CREATE_TIME_TOLERANCE_S:
            return False  # the pid was reused by another process
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    return _running(proc)


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def service_processes(record: ProcessRecord) -> list[psutil.Process]:
    """Every running process that belongs to the recorded service.

    That is the leader, its recursive children, and every process still in the leader's session
    (the leader was started as a session leader, so sid == its pid), which catches daemons that
    double-forked away from the tree. If the leader is gone, its session members are orphans and
    still ours: Linux does not hand out a pid that is still in use as a session id. If the pid
    is alive but with another create_time, it was reused and nothing is ours.
    """
    found: dict[int, psutil.Process] = {}
    leader_alive = False
    try:
        leader = psutil.Process(record.pid)
        if abs(leader.create_time() - record.create_time) > CREATE_TIME_TOLERANCE_S:
            return []
        if _running(leader):
            leader_alive = True
            found[leader.pid] = leader
            for child in leader.children(recursive=True):
                found[child.pid] = child
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        pass
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == me:
            continue
        if _sid(proc.pid) == record.pid:
            try:
                # A session member cannot predate its session leader.
                if leader_alive or proc.create_time() >= record.create_time - CREATE_TIME_TOLERANCE_S:
                    found[proc.pid] = proc
            except psutil.Error:
                continue
    return [p for p in found.values() if _running(p)]


def _signal(procs: Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess, ProcessLookupError):
            proc.send_signal(sig)


def _wait_gone(procs: Sequence[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until every process has exited (zombies count as exited); return those still running.

    Not ``psutil.wait_procs``: for a process that is not our child it waits for the pid to
    disappear, which a zombie whose parent does not reap never does.
    """
    alive = [p for p in procs if _running(p)]

    def exited() -> bool | None:
        alive[:] = [p for p in alive if _running(p)]
        return True if not alive else None

    poll(exited, timeout_s, 0.05)
    return alive


def _wait_released(pids: Iterable[int], timeout_s: float) -> None:
    """Wait (bounded) until the pids are no longer in use, zombies included.

    A service that checks a pid lock file with ``kill(pid, 0)`` (PostgreSQL's ``postmaster.pid``)
    takes an unreaped zombie for a running instance and refuses to start. An orphan's zombie is
    reaped by init soon after it exits; a zombie whose parent never reaps stays, and we go on.
    """
    waiting = set(pids)

    def released() -> bool | None:
        for pid in list(waiting):
            _reap(pid)
            if not psutil.pid_exists(pid):
                waiting.discard(pid)
        return True if not waiting else None

    poll(released, timeout_s, 0.05)


def stop_process_tree(record: ProcessRecord, grace_s: float, stop_signal: int = signal.SIGTERM) -> list[int]:
    """Stop a service and all its processes: ``stop_signal``, ``grace_s`` to exit, then SIGKILL.

    Returns the pids that were signalled (empty when nothing of the service was running).
    Raises ``LocalServiceError`` if a process survives SIGKILL (stuck in the kernel).
    """
    procs = service_processes(record)
    if not procs:
        _reap(record.pid)
        return []
    signalled = {p.pid for p in procs}
    if any(p.pid == record.pid for p in procs):
        # The group catches a child forked between our scan and the signals below.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(record.pid, stop_signal)
    _signal(procs, stop_signal)
    survivors = _wait_gone(procs, grace_s)
    # Rescan: a process may have forked while shutting down.
    extra = [p for p in service_processes(record) if p.pid not in {s.pid for s in survivors}]
    survivors += extra
    if survivors:
        signalled.update(p.pid for p in survivors)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(record.pid, signal.SIGKILL)
        _signal(survivors, signal.SIGKILL)
        stuck = _wait_gone(survivors, KILL_WAIT_S)
        if stuck:
            raise LocalServiceError(f"processes {sorted(p.pid for p in stuck)} survived SIGKILL")
    _reap(record.pid)
    _wait_released(signalled, KILL_WAIT_S)
    with _SPAWNED_LOCK:
        _SPAWNED.pop(record.pid, None)
    return sorted(signalled)


# --------------------------------------------------------------------------------------------
# Ports, files, logs
# --------------------------------------------------------------------------------------------


def port_owner_pid(port: int, host: str = LOOPBACK) -> int | None:
    """Pid of the process listening on ``host:port``, or None if it cannot be told."""
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, PermissionError):
        return None
    for conn in conns:
        if not conn.laddr or conn.laddr.port != port or conn.status != psutil.CONN_LISTEN:
            continue
        if conn.laddr.ip in (host, "0.0.0.0", "::", "::ffff:" + host) and conn.pid:  # noqa: S104 - a listener, not a bind
            return conn.pid
    return None


def port_owner(port: int, host: str = LOOPBACK) -> str | None:
    """``"pid N cmd ..."`` of the process listening on ``port``, or None if it cannot be told."""
    pid = port_owner_pid(port, host)
    if pid is None:
        return None
    try:
        cmd = shlex.join(psutil.Process(pid).cmdline()) or psutil.Process(pid).name()
    except psutil.Error:
        cmd = "?"
    if len(cmd) > 200:
        cmd = cmd[:197] + "..."
    return f"pid {pid} cmd {cmd}"


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True when a server could bind ``host:port`` now.

    SO_REUSEADDR like the services themselves use: without it, connections of the previous
    instance lingering in TIME_WAIT (e.g. our own health probes) would look like a busy port
    right after a restart, while only a real listener makes the bind fail.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def ensure_ports_free(service: str, ports: Sequence[int], host: str = LOOPBACK) -> None:
    """Raise ``LocalServiceError`` naming every port of ``service`` that is already taken."""
    busy = []
    for port in ports:
        if not port_is_free(port, host):
            owner = port_owner(port, host)
            who = f"by {owner}" if owner else f"owner unknown; try: ss -ltnp 'sport = :{port}'"
            busy.append(f"service '{service}': port {port} on {host} is already in use ({who})")
    if busy:
        raise LocalServiceError("\n".join(busy))


def tail_log(log_file: str | os.PathLike[str], lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file (read from the end, so big logs are cheap)."""
    try:
        with open(log_file, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            block, data = 8192, b""
            while size > 0 and data.count(b"\n") <= lines:
                step = min(block, size)
                size -= step
                fh.seek(size)
                data = fh.read(step) + data
    except OSError as exc:
        return f"(log {log_file} unreadable: {exc.strerror})"
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def _failure(spec: ServiceInputs, reason: str) -> LocalServiceError:
    """An error for the operator: service, reason and the log tail that usually explains it."""
    return LocalServiceError(
        f"service '{spec.service}': {reason}\n"
        f"--- last {LOG_TAIL_LINES} lines of {spec.log_file} ---\n{tail_log(spec.log_file)}"
    )


def _log_event(log_file: str, message: str) -> None:
    """Append one timestamped line of our own to the service log (never secrets)."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(log_file, "a", encoding="utf-8") as fh:
        fh.write(f"[local-service {stamp}] {message}\n")


class UserIds(NamedTuple):
    """Everything needed to run a child as another user, resolved before fork (NSS is not fork-safe)."""

    uid: int
    gid: int
    groups: list[int]
    entry: pwd.struct_passwd


def _user_ids(user: str | None) -> UserIds | None:
    """The ids of ``user``; None to keep the current user."""
    if not user:
        return None
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise LocalServiceError(f"run_as_user: no such user {user!r}") from None
    return UserIds(entry.pw_uid, entry.pw_gid, os.getgrouplist(user, entry.pw_gid), entry)


def write_files(files: Mapping[str, str], owner: str | None = None) -> None:
    """Write each file atomically with mode 0600 (contents may be secrets, never readable by others)."""
    ids = _user_ids(owner)
    for path_text, content in files.items():
        path = Path(path_text)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        # A fresh file created 0600 (O_EXCL, after removing any leftover of a crashed run), so the
        # content never exists with wider permissions.
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(content)
            if ids:
                os.chown(tmp, ids.uid, ids.gid)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


def remove_files(paths: Iterable[str]) -> None:
    """Remove managed files (rendered config); missing ones are fine."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


# --------------------------------------------------------------------------------------------
# Spawning
# --------------------------------------------------------------------------------------------


def _child_env(spec: ServiceInputs, ids: UserIds | None) -> dict[str, str]:
    """The base environment (see ``INHERITED_ENV_VARS``), the run-as user's identity, then ``env``."""
    env = {k: os.environ[k] for k in INHERITED_ENV_VARS if k in os.environ}
    if ids:
        env.update(HOME=ids.entry.pw_dir, USER=ids.entry.pw_name, LOGNAME=ids.entry.pw_name)
    env.update(spec.env)
    return env


CAP_SYS_RESOURCE = 24


def can_raise_hard_limits() -> bool:
    """Whether this process may raise a hard rlimit: it needs CAP_SYS_RESOURCE, which root in a
    container often lacks, so being root is not enough."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() == 0


def _child_identity(spec: ServiceInputs, ids: UserIds | None) -> dict[str, Any]:
    """Popen arguments that start the child as ``run_as_user`` and with ``ulimit_nofile``.

    No ``preexec_fn``: the provider process runs gRPC threads, and Python code between fork and
    exec in a threaded process can deadlock or crash the child (seen here: a postgres start
    dying with SIGSEGV). Popen's ``user``/``group``/``extra_groups`` switch identity in C, and the
    open-files limit is raised on this process itself, so the child inherits it (raising a soft
    limit up to the hard limit is harmless for the provider, which is short-lived).
    """
    nofile = spec.ulimit_nofile
    if nofile is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if nofile > hard and not can_raise_hard_limits():
            raise LocalServiceError(
                f"service '{spec.service}': ulimit_nofile {nofile} exceeds the hard limit {hard}, "
                "which this process may not raise (needs CAP_SYS_RESOURCE)"
            )
        if soft < nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, max(nofile, hard)))
    if ids is None:
        return {}
    return {"user": ids.uid, "group": ids.gid, "extra_groups": ids.groups}


def _prepare_dirs(spec: ServiceInputs, ids: UserIds | None) -> None:
    """Create data dir (0700) and log dir; hand them to the run-as user; check cwd."""
    data_dir = Path(spec.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)  # the service's state, possibly with credentials
    Path(spec.log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(spec.log_file).touch(exist_ok=True)
    if ids:
        # The service (e.g. postgres, which refuses to run as root) must own its state.
        os.chown(data_dir, ids.uid, ids.gid)
        os.chown(spec.log_file, ids.uid, ids.gid)
    if not Path(spec.cwd).is_dir():
        raise LocalServiceError(f"service '{spec.service}': cwd {spec.cwd} is not a directory")


def _run_steps(spec: ServiceInputs, steps: list[list[str]], what: str) -> None:
    """Run argv steps to completion, output to the service log; a failure raises with the log tail."""
    ids = _user_ids(spec.run_as_user)
    env = _child_env(spec, ids)
    for index, argv in enumerate(steps, start=1):
        _log_event(spec.log_file, f"{what} step {index}/{len(steps)}: {argv[0]}")
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
                    **_child_identity(spec, ids),
                    timeout=SETUP_STEP_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                reason = f"{what} step {index} ({argv[0]}) timed out after {SETUP_STEP_TIMEOUT_S:.0f}s"
                raise _failure(spec, reason) from None
            except (OSError, subprocess.SubprocessError) as exc:
                reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
                raise _failure(spec, f"{what} step {index} ({argv[0]}) could not start: {reason}") from None
        if done.returncode != 0:
            raise _failure(spec, f"{what} step {index} ({argv[0]}) failed with exit code {done.returncode}")


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
        _log_event(spec.log_file, f"pre-stop failed, stopping anyway: {str(exc).splitlines()[0]}")


def _watchdog_config(spec: ServiceInputs, ids: UserIds | None) -> Path:
    """The watchdog's config (argv may hold secrets: 0600 inside the 0700 data dir; env stays in the environ)."""
    config = {
        "argv": spec.argv, "cwd": spec.cwd, "log_file": spec.log_file, "data_dir": spec.data_dir,
        "restart": spec.restart_policy.model_dump(),
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
    ids = _user_ids(spec.run_as_user)
    _log_event(spec.log_file, f"starting service '{spec.service}': {spec.argv[0]} (+{len(spec.argv) - 1} args)")
    config = _watchdog_config(spec, ids)
    _child_identity(spec, ids)  # raises this process's open-files limit; the watchdog and service inherit it
    with open(spec.log_file, "ab") as log:
        try:
            popen = subprocess.Popen(
                [sys.executable, str(WATCHDOG), str(config)],
                cwd=spec.cwd,
                env=_child_env(spec, ids),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise _failure(spec, f"cannot start the watchdog of {spec.argv[0]}: {exc.strerror}") from None
    with _SPAWNED_LOCK:
        _SPAWNED[popen.pid] = popen
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


# --------------------------------------------------------------------------------------------
# Health
# --------------------------------------------------------------------------------------------


def _json_path(document: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(document, Mapping) or part not in document:
            raise HealthPending(f"JSON field {dotted!r} missing")
        document = document[part]
    return document


def probe_health(
    health: Mapping[str, Any],
    timeout_s: float,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> None:
    """Run one health probe; return if healthy, raise ``HealthPending`` with the reason if not.

    Kinds:
      * ``{"kind": "http", "url": ..., "expect_status": 200, "json_field": "a.b", "json_expect": v}``:
        GET must answer ``expect_status``; with ``json_field`` the JSON body's field must equal
        ``json_expect`` if given, else be truthy (Trino: ``json_field="starting", json_expect=False``).
      * ``{"kind": "tcp", "host": "127.0.0.1", "port": N}``: a TCP connect succeeds.
      * ``{"kind": "command", "argv": [...]}``: the command exits 0 (e.g. ``pg_isready``).
    """
    health = plain(health, drop_none=True)
    kind = health.get("kind")
    if kind == "http":
        with requests.Session() as session:
            # Never through a proxy from the environment: the target is on loopback.
            session.trust_env = False
            try:
                resp = session.get(health["url"], timeout=timeout_s)
            except requests.RequestException as exc:
                raise HealthPending(f"GET {health['url']}: {type(exc).__name__}") from None
        expect = int(health.get("expect_status", 200))
        if resp.status_code != expect:
            raise HealthPending(f"GET {health['url']} answered {resp.status_code}, expected {expect}")
        if "json_field" in health:
            try:
                document = resp.json()
            except ValueError:
                raise HealthPending(f"GET {health['url']}: body is not JSON") from None
            value = _json_path(document, health["json_field"])
            expected = health.get("json_expect")
            if "json_expect" in health and value != expected:
                raise HealthPending(f"JSON field {health['json_field']!r} is {value!r}, expected {expected!r}")
            if "json_expect" not in health and not value:
                raise HealthPending(f"JSON field {health['json_field']!r} is {value!r}, expected a truthy value")
    elif kind == "tcp":
        host, port = health.get("host", LOOPBACK), int(health["port"])
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            raise HealthPending(f"TCP connect {host}:{port}: {exc.strerror or exc}") from None
    elif kind == "command":
        argv = [str(a) for a in health["argv"]]
        try:
            done = subprocess.run(argv, env=dict(env) if env is not None else None, cwd=cwd,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise HealthPending(f"health command {argv[0]} timed out") from None
        except OSError as exc:
            raise HealthPending(f"health command {argv[0]} could not start: {exc.strerror}") from None
        if done.returncode != 0:
            raise HealthPending(f"health command {argv[0]} exited {done.returncode}")
    else:
        raise LocalServiceError(f"unknown health check kind {kind!r}")


def wait_healthy(spec: ServiceInputs, record: ProcessRecord) -> None:
    """Wait until the health check passes, the process dies, or ``health_timeout_s`` runs out.

    Raises ``ServiceExited`` at once if the process dies (no point waiting out the timeout) and
    ``LocalServiceError`` on timeout; both carry the log tail. The process is left as it is.
    """
    deadline = time.monotonic() + spec.health_timeout_s
    env = _child_env(spec, _user_ids(spec.run_as_user))

    def attempt() -> None:
        if not process_matches(record):
            code = _reap(record.pid)
            how = f"exited with code {code}" if code is not None else "exited"
            raise ServiceExited(str(_failure(spec, f"process {record.pid} {how} before becoming healthy")))
        # The watchdog reports the service it started; until then it cannot be armed (SIGUSR1).
        supervised = watchdog.read_status(spec.data_dir)
        if supervised.get("watchdog_pid") != record.pid or not supervised.get("pid"):
            raise HealthPending("the watchdog has not started the service yet")
        remaining = max(0.1, deadline - time.monotonic())
        probe_health(spec.health_check, min(MAX_PROBE_TIMEOUT_S, remaining), env=env, cwd=spec.cwd)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(spec.health_timeout_s),
        # Fast first polls (most services are up in well under a second), then back off.
        wait=tenacity.wait_exponential(multiplier=0.05, max=0.5),
        retry=tenacity.retry_if_exception_type(HealthPending),
        reraise=True,
    )
    try:
        retrying(attempt)
    except HealthPending as last:
        raise _failure(spec, f"not healthy within {spec.health_timeout_s:g}s (last check: {last})") from None
    # A service that passed its check and then died at once is not up (e.g. the port answered
    # from a process that exits on a config error right after binding).
    if not process_matches(record):
        raise _failure(spec, f"process {record.pid} exited right after its health check passed")


# --------------------------------------------------------------------------------------------
# High-level operations (what the provider calls)
# --------------------------------------------------------------------------------------------


def _now_iso(epoch: float) -> str:
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).isoformat(timespec="seconds")


def stop_service(spec: ServiceInputs, record: ProcessRecord | None) -> list[int]:
    """Stop what is known of the service: the given record and the one in ``.pid``; remove ``.pid``."""
    signalled: list[int] = []
    records = {r for r in (record, ProcessRecord.from_pid_file(spec.pid_file)) if r is not None and r.pid > 0}
    for rec in records:
        pids = stop_process_tree(rec, spec.stop_grace_s, signal.Signals[spec.stop_signal])
        if pids:
            _log_event(spec.log_file, f"stopped service '{spec.service}' (pids {pids})")
        signalled += pids
    with contextlib.suppress(FileNotFoundError):
        spec.pid_file.unlink()
    return signalled


def start_service(spec: ServiceInputs) -> ProcessRecord:
    """Everything create does: ports, dirs, files, setup, spawn, health. Stops the process on failure."""
    ids = _user_ids(spec.run_as_user)
    _prepare_dirs(spec, ids)
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
    _log_event(spec.log_file, f"service '{spec.service}' is healthy (pid {record.pid})")
    return record


def _outputs(spec: ServiceInputs, record: ProcessRecord | None, started_at: str) -> dict[str, Any]:
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


def _record_of(props: Mapping[str, Any]) -> ProcessRecord | None:
    pid = props.get("pid") or 0
    if not pid or props.get("alive") is False:
        return None
    return ProcessRecord(int(pid), float(props.get("create_time") or 0.0))


# --------------------------------------------------------------------------------------------
# Pulumi provider and resource
# --------------------------------------------------------------------------------------------


class LocalServiceProvider(pulumi.dynamic.ResourceProvider):
    """Dynamic provider managing one local process per resource (contract: module docstring)."""

    # Nothing secret is captured when the provider is serialized (it is this module's source),
    # so the blob need not be encrypted in the state.
    serialize_as_secret_always = False

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        from infra.by_value import provider_by_value  # pickling runs in the program only

        return provider_by_value(__file__, type(self).__name__)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = [pulumi.dynamic.CheckFailure(key, why) for key, why in validate_props(news)]
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        spec = ServiceInputs.from_props(props)
        record = start_service(spec)
        return pulumi.dynamic.CreateResult(spec.service, _outputs(spec, record, _now_iso(record.create_time)))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        """Compare inputs by value (``olds`` are the recorded outputs); a dead service is a change."""
        old_view, new_view = input_view(olds), input_view(news)
        changed = [key for key in INPUT_KEYS if is_unknown(news.get(key)) or old_view[key] != new_view[key]]
        replaces = [key for key in changed if key in REPLACE_KEYS]
        # Checked live as well, so `pulumi up` restarts a crashed service even without a refresh.
        dead = not process_matches(_record_of(olds))
        return pulumi.dynamic.DiffResult(
            changes=bool(changed) or dead,
            replaces=replaces,
            stables=[],
            delete_before_replace=True,
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        """Restart only when the process depends on what changed, or when it is not running."""
        new_spec = ServiceInputs.from_props(news)
        old_view, new_view = input_view(olds), input_view(news)
        record = _record_of(olds)
        needs_restart = not process_matches(record) or any(old_view[k] != new_view[k] for k in RESTART_KEYS)
        if not needs_restart:
            assert record is not None
            return pulumi.dynamic.UpdateResult(_outputs(new_spec, record, str(olds.get("started_at", ""))))
        old_spec = ServiceInputs.from_props(olds)
        if process_matches(record):
            run_pre_stop(new_spec)
        stop_service(old_spec, record)
        remove_files(set(old_spec.files) - set(new_spec.files))
        new_record = start_service(new_spec)
        return pulumi.dynamic.UpdateResult(_outputs(new_spec, new_record, _now_iso(new_record.create_time)))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """Report whether the recorded process still runs; a dead one reads as ``pid 0, alive false``."""
        if "data_dir" not in props:
            raise LocalServiceError(f"LocalService {id_!r}: cannot be imported, only created by Pulumi")
        spec = ServiceInputs.from_props(props)
        record = _record_of(props)
        started_at = str(props.get("started_at", ""))
        return pulumi.dynamic.ReadResult(id_, _outputs(spec, record if process_matches(record) else None, started_at))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Stop the process tree; keep ``data_dir`` (the service's state), remove rendered files."""
        spec = ServiceInputs.from_props(props)
        stop_service(spec, _record_of(props))
        remove_files(spec.files)


# Secret inputs are encrypted in the state through these outputs (see module docstring).
SECRET_OUTPUTS = ["env", "files"]


def resource_options(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """``opts`` plus what every LocalService needs: its secret outputs."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS))


class LocalService(pulumi.dynamic.Resource, module="native", name="LocalService"):
    """One platform service running as a local process (contract: module docstring)."""

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
