"""Acting on one service of a deployed stack, whatever runs it: a process by its pid, or a container through Docker.

One interface (``ServiceControl``) for what the probes and the operator's procedures do to a running service:
stop it, start it again, restart it, crash it (SIGKILL of its process, as its supervisor sees a crash), send it
a signal, hang it (pause) and let it go on (unpause), read its resident memory, its command lines and its files.
Two implementations, chosen by the stack's ``target`` output:

- ``NativeServices``: each service is a process tree under its watchdog (``native.services``: pid and data
  directory). Stop: the tree, by its pid record (the watchdog stops too, nothing restarts it). Start again:
  ``pulumi up``, which starts exactly what is not running and waits for its health check. Crash: SIGKILL of the
  service's process (the watchdog's child); the watchdog restarts it. Hang: SIGSTOP of the process and its
  children, SIGCONT to go on.
- ``DockerServices``: each service is a container (``docker.containers``: name and id), through the Docker SDK
  for Python on ``DOCKER_HOST``'s engine. Stop: ``docker stop``; start again: ``docker start`` (then its health
  check); restart: ``docker restart`` (the engine's restart policy is the lab's supervision). Crash: SIGKILL of the
  container's main process by its host pid, which the engine records as a crash and restarts by the container's
  restart policy; ``docker kill`` is recorded as an operator's stop instead (measured on dockerd 20.10: the
  container stays exited, RestartCount 0), so it is ``kill``, not ``crash``. Hang: ``docker pause`` (the freezer
  cgroup: the port still accepts, nothing answers), ``docker unpause``. Memory: ``docker stats``' figure (usage
  less inactive file cache, as the CLI shows it).

``Unsupported`` says why a target cannot do something (the probes skip with that reason).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import tarfile
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lakehouse_platform.paths import state_root

#: How long a stopped service gets to exit before it is killed (the native stop and ``docker stop`` alike).
STOP_GRACE_S = 30
#: How long a started service gets to be healthy again.
HEALTHY_TIMEOUT_S = 600.0
#: Every process's command line in a container, one per line: ``<pid>\t<cwd>\t<argv joined by spaces>``.
_PROCESSES_SCRIPT = ('for p in /proc/[0-9]*; do [ -r "$p/cmdline" ] || continue; '
                     'printf "%s\\t%s\\t" "${p#/proc/}" "$(readlink "$p/cwd" 2>/dev/null)"; '
                     'tr "\\000" " " < "$p/cmdline"; echo; done')


class ServiceControlError(RuntimeError):
    """A service could not be acted on; the message names it and says what was seen."""


class Unsupported(ServiceControlError):
    """This target cannot do it here; the message says why (a probe skips with it)."""


@dataclass(frozen=True)
class Instance:
    """Which instance of a service runs now: a process (pid and start time) or a container's current start."""

    service: str
    ident: str  # "pid 1234" | "container book2-rest-fixture (0123456789ab)"
    started: str  # the process's create time | the container's StartedAt
    running: bool
    restarts: int | None = None  # by its supervisor (the watchdog | the engine's restart policy)
    detail: dict[str, Any] = field(default_factory=dict)

    def same_as(self, other: Instance) -> bool:
        """The same running instance (a restart or a crash and heal gives another)."""
        return (self.ident, self.started) == (other.ident, other.started)

    def __str__(self) -> str:
        return f"{self.ident}, started {self.started}, restarts {self.restarts}"


@dataclass(frozen=True)
class Memory:
    """Resident memory of a service: bytes, and how many processes hold it."""

    bytes: int
    processes: int
    source: str


@dataclass(frozen=True)
class ProcessLine:
    """One process of a service: its pid (in its own pid namespace), working directory and arguments."""

    pid: int
    cwd: str
    args: str


class ServiceControl(Protocol):
    """What can be done to a running service of a deployed stack (see the module docstring)."""

    target: str

    def services(self) -> dict[str, int | None]:
        """The stack's running services (servers, not jobs) and their memory budgets in bytes."""
        ...

    def describe(self, service: str) -> str: ...

    def instance(self, service: str) -> Instance: ...

    def stop(self, service: str, grace_s: float = STOP_GRACE_S) -> float: ...

    def start(self, service: str) -> float: ...

    def restart(self, service: str) -> float: ...

    def can_crash(self, service: str) -> None:
        """Raises ``Unsupported`` (why) where a crash cannot be made here, before anything is started."""
        ...

    def crash(self, service: str) -> Instance: ...

    def kill(self, service: str, sig: int) -> None: ...

    def pause(self, service: str) -> list[str]: ...

    def unpause(self, service: str) -> None: ...

    def memory(self, service: str) -> Memory: ...

    def processes(self, service: str) -> list[ProcessLine]: ...

    def list_dir(self, service: str, path: str) -> list[str]: ...

    def fetch_file(self, service: str, path: str, into: Path) -> Path: ...


def for_outputs(outputs: Mapping[str, Any], stack: str | None = None) -> ServiceControl:
    """The control of a deployed stack's services, from its outputs (``stack``: natively, ``pulumi up`` starts)."""
    target = str(outputs.get("target", "?"))
    if target == "native":
        return NativeServices(outputs, stack)
    if target == "docker":
        return DockerServices(outputs)
    raise Unsupported(f"target {target}: its services are the cloud's managed services and ECS tasks; nothing on this "
                      "host acts on them (stop, restart, signals are the provider's console or API)")


# ------------------------------------------------------------------------------------------------
# native: processes by their pid records
# ------------------------------------------------------------------------------------------------


class NativeServices:
    """The native target's services: process trees under their watchdogs, by pid."""

    target = "native"

    def __init__(self, outputs: Mapping[str, Any], stack: str | None):
        self.outputs = outputs
        self.stack = stack
        self._paused: dict[str, list[int]] = {}

    def _record(self, service: str) -> dict[str, Any]:
        found = ((self.outputs.get("native") or {}).get("services") or {}).get(service)
        if not found:
            raise ServiceControlError(f"{service} is not a native service of this stack (native.services)")
        return dict(found)

    def services(self) -> dict[str, int | None]:
        return {name: record.get("memory_budget_bytes")
                for name, record in ((self.outputs.get("native") or {}).get("services") or {}).items()}

    def describe(self, service: str) -> str:
        return f"{service} (process tree of pid {self._record(service).get('pid')})"

    def _status(self, service: str) -> dict[str, Any]:
        from lakehouse_platform.runtime import watchdog

        return watchdog.read_status(self._record(service)["data_dir"])

    def instance(self, service: str) -> Instance:
        import psutil

        status = self._status(service)
        pid = int(status.get("pid") or 0)
        started, running = "-", False
        if pid:
            try:
                process = psutil.Process(pid)
                started, running = repr(process.create_time()), process.status() != psutil.STATUS_ZOMBIE
            except psutil.Error:
                pass
        return Instance(service, f"pid {pid or '-'}", started, running, status.get("restarts"), status)

    def _pid_record(self, service: str) -> Any:
        from lakehouse_platform.targets.native import local_service

        data_dir = Path(self._record(service)["data_dir"])
        return local_service.ProcessRecord.from_pid_file(data_dir / local_service.PID_FILE_NAME)

    def stop(self, service: str, grace_s: float = STOP_GRACE_S) -> float:
        """The whole process tree, watchdog included, by its pid record: nothing restarts it until ``start``."""
        from lakehouse_platform.targets.native import local_service

        began = time.perf_counter()
        record = self._pid_record(service)
        if record is not None:
            local_service.stop_process_tree(record, grace_s=grace_s)
        return time.perf_counter() - began

    def start(self, service: str) -> float:
        """``pulumi up``: starts exactly what is not running, waits for its health check."""
        if not self.stack:
            raise Unsupported(f"natively {service} is started again by `pulumi up` on its stack: name the stack "
                              "(--stack), not an outputs file")
        from lakehouse_platform.control.workspace import up

        return up(self.stack, quiet=True)

    def restart(self, service: str) -> float:
        """The target's restart: stopped by its pid record, started again (and healthy) by ``pulumi up``."""
        if not self.stack:
            raise Unsupported(f"natively {service} is restarted through `pulumi up` on its stack: name the stack")
        return self.stop(service) + self.start(service)

    def can_crash(self, service: str) -> None:
        victim = self.instance(service)
        if not victim.detail.get("pid") or not victim.running:
            raise ServiceControlError(f"{service} has no running process to kill (watchdog: {victim.detail})")

    def crash(self, service: str) -> Instance:
        """SIGKILL of the service's process (the watchdog's child): its watchdog restarts it."""
        self.can_crash(service)
        victim = self.instance(service)
        os.kill(int(victim.detail["pid"]), signal.SIGKILL)
        return victim

    def kill(self, service: str, sig: int) -> None:
        pid = int(self._status(service).get("pid") or 0)
        if not pid:
            raise ServiceControlError(f"{service} has no running process")
        os.kill(pid, sig)

    def _tree(self, pid: int) -> list[Any]:
        import psutil

        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]

    def pause(self, service: str) -> list[str]:
        """SIGSTOP of the service's process and its children (its port accepts, nothing answers)."""
        pid = int(self._status(service).get("pid") or 0)
        if not pid:
            raise ServiceControlError(f"{service} has no running process to hang")
        processes = self._tree(pid)
        for process in processes:
            process.send_signal(signal.SIGSTOP)
        self._paused[service] = [p.pid for p in processes]
        return [f"pid {p.pid}" for p in processes]

    def unpause(self, service: str) -> None:
        import psutil

        for pid in self._paused.pop(service, []):
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).send_signal(signal.SIGCONT)

    def memory(self, service: str) -> Memory:
        """Resident set size of the recorded pid and all its children."""
        import psutil

        pid = int(self._record(service).get("pid") or 0)
        total, count = 0, 0
        try:
            tree = self._tree(pid)
        except (psutil.Error, ValueError) as exc:
            raise ServiceControlError(f"{service}: pid {pid} is not running ({type(exc).__name__})") from None
        for process in tree:
            with contextlib.suppress(psutil.Error):
                total += process.memory_info().rss
                count += 1
        return Memory(total, count, f"RSS of pid {pid} and its children")

    def processes(self, service: str) -> list[ProcessLine]:
        import psutil

        pid = int(self._record(service).get("pid") or 0)
        found = []
        for process in self._tree(pid):
            with contextlib.suppress(psutil.Error):
                found.append(ProcessLine(process.pid, process.cwd(), " ".join(process.cmdline())))
        return found

    def list_dir(self, service: str, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def fetch_file(self, service: str, path: str, into: Path) -> Path:
        return Path(path)  # the service's files are this host's


# ------------------------------------------------------------------------------------------------
# docker: containers through the Docker SDK
# ------------------------------------------------------------------------------------------------


def project_engine_socket() -> str:
    """The socket of the project's own engine (``make engine``: scripts/docker-engine.sh)."""
    return str(state_root() / "docker" / "docker.sock")


def point_at_engine(environ: MutableMapping[str, str] = os.environ) -> str:
    """``DOCKER_HOST`` as it stands, or (unset, and the project's own engine's socket exists) that engine's; the
    classic builder, as the engine script sets it. What the provider plugin and the SDK then talk to."""
    if not environ.get("DOCKER_HOST") and os.path.exists(project_engine_socket()):
        environ["DOCKER_HOST"] = f"unix://{project_engine_socket()}"
        environ.setdefault("DOCKER_BUILDKIT", "0")
    return environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def docker_client(timeout_s: int = 600) -> Any:
    """A client of the engine ``point_at_engine`` finds (the SDK imported by name: the repository's docker/
    directory would shadow it for type checkers)."""
    point_at_engine()
    return importlib.import_module("docker").from_env(timeout=timeout_s)


class DockerServices:
    """The lab's services: containers on ``DOCKER_HOST``'s engine, by the names the stack outputs give."""

    target = "docker"

    def __init__(self, outputs: Mapping[str, Any], client: Any = None):
        self.containers: dict[str, dict[str, Any]] = dict((outputs.get("docker") or {}).get("containers") or {})
        if not self.containers:
            raise ServiceControlError("the stack outputs have no docker.containers: deploy the lab with this program "
                                      "(pulumi up --stack lab), or pass outputs that carry them")
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                self._client = docker_client()
                self._client.ping()
            except Exception as exc:  # noqa: BLE001 - the SDK raises several kinds for "no engine"
                raise ServiceControlError(f"no Docker engine answers at DOCKER_HOST="
                                          f"{os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')}: {exc}; "
                                          "point the shell at the lab's engine (eval \"$(scripts/docker-engine.sh "
                                          "env)\")") from None
        return self._client

    def name_of(self, service: str) -> str:
        entry = self.containers.get(service)
        if not entry:
            raise ServiceControlError(f"{service} is not a container of this stack (docker.containers: "
                                      f"{', '.join(sorted(self.containers))})")
        return str(entry["name"])

    def container(self, service: str) -> Any:
        errors = importlib.import_module("docker.errors")
        try:
            return self.client.containers.get(self.name_of(service))
        except errors.NotFound:
            raise ServiceControlError(f"container {self.name_of(service)} ({service}) does not exist on the engine: "
                                      "is the lab up?") from None

    def services(self) -> dict[str, int | None]:
        return {name: entry.get("memory_budget_bytes") for name, entry in self.containers.items()
                if entry.get("kind", "server") == "server"}

    def describe(self, service: str) -> str:
        return f"{service} (container {self.name_of(service)})"

    def instance(self, service: str) -> Instance:
        found = self.container(service)
        found.reload()
        state = found.attrs["State"]
        detail = {"status": state.get("Status"), "pid": state.get("Pid"), "exit_code": state.get("ExitCode"),
                  "health": (state.get("Health") or {}).get("Status"), "restart_count": found.attrs.get("RestartCount"),
                  "restart_policy": (found.attrs.get("HostConfig") or {}).get("RestartPolicy", {}).get("Name")}
        return Instance(service, f"container {found.name} ({found.id[:12]})", str(state.get("StartedAt")),
                        bool(state.get("Running")) and not state.get("Paused"), found.attrs.get("RestartCount"), detail)

    def wait_healthy(self, service: str, timeout_s: float = HEALTHY_TIMEOUT_S) -> float:
        """Until the container's health check passes (or, without one, it runs); seconds waited."""
        began = time.monotonic()
        while True:
            found = self.container(service)
            found.reload()
            state = found.attrs["State"]
            health = state.get("Health")
            if state.get("Running") and (health is None or health.get("Status") == "healthy"):
                return time.monotonic() - began
            if time.monotonic() - began > timeout_s:
                checks = (health or {}).get("Log") or []
                last = checks[-1].get("Output", "").strip()[-300:] if checks else ""
                raise ServiceControlError(f"{self.describe(service)} is not healthy after {timeout_s:.0f} s "
                                          f"(status {state.get('Status')}, last check: {last!r})")
            time.sleep(0.5)

    def stop(self, service: str, grace_s: float = STOP_GRACE_S) -> float:
        """``docker stop``: the engine does not restart it (an operator's stop) until ``start``."""
        began = time.perf_counter()
        self.container(service).stop(timeout=int(grace_s))
        return time.perf_counter() - began

    def start(self, service: str) -> float:
        """``docker start``, then its health check; seconds until healthy."""
        began = time.perf_counter()
        self.container(service).start()
        self.wait_healthy(service)
        return time.perf_counter() - began

    def restart(self, service: str) -> float:
        """``docker restart`` (stop, then start on the same container), then its health check."""
        began = time.perf_counter()
        self.container(service).restart(timeout=STOP_GRACE_S)
        self.wait_healthy(service)
        return time.perf_counter() - began

    def can_crash(self, service: str) -> None:
        """The container runs, and its main process is this host's (the engine runs here)."""
        victim = self.instance(service)
        pid = int(victim.detail.get("pid") or 0)
        if not pid or not victim.running:
            raise ServiceControlError(f"{self.describe(service)} is not running: {victim.detail}")
        if (victim.detail.get("restart_policy") or "no") == "no":
            raise Unsupported(f"{self.describe(service)} has no restart policy: nothing would start it after a crash")
        try:
            cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            cgroup = ""
        if self.container(service).id not in cgroup:
            raise Unsupported(f"the engine at DOCKER_HOST does not run on this host (its pid {pid} for "
                              f"{self.name_of(service)} is not this host's): a crash is a SIGKILL of the container's "
                              "process on the engine's host; `docker kill` would be an operator's stop, which the "
                              "restart policy ignores")

    def crash(self, service: str) -> Instance:
        """SIGKILL of the container's main process by its host pid: the engine sees a crash, and its restart
        policy (the lab's supervision) starts the container again."""
        self.can_crash(service)
        victim = self.instance(service)
        os.kill(int(victim.detail["pid"]), signal.SIGKILL)
        return victim

    def kill(self, service: str, sig: int) -> None:
        """``docker kill --signal``: to the container's main process (a SIGKILL is recorded as an operator's stop)."""
        self.container(service).kill(signal=int(sig))

    def pause(self, service: str) -> list[str]:
        """``docker pause``: every process frozen; the published port still accepts, nothing answers."""
        found = self.container(service)
        found.pause()
        return [f"container {found.name} ({found.id[:12]})"]

    def unpause(self, service: str) -> None:
        found = self.container(service)
        found.reload()
        if found.attrs["State"].get("Paused"):
            found.unpause()

    def memory(self, service: str) -> Memory:
        """``docker stats``' memory: the cgroup's usage less its inactive file cache, and the pids in it."""
        found = self.container(service)
        stats = found.stats(stream=False)
        memory = stats.get("memory_stats") or {}
        if "usage" not in memory:
            raise ServiceControlError(f"{self.describe(service)}: the engine reports no memory usage (not running?)")
        details = memory.get("stats") or {}
        cache = details.get("total_inactive_file", details.get("inactive_file", 0))  # cgroup v1 | v2
        processes = int((stats.get("pids_stats") or {}).get("current") or 0)
        return Memory(int(memory["usage"]) - int(cache), processes,
                      f"docker stats of {found.name}: usage {memory['usage']} less inactive file cache {cache}")

    def _exec(self, service: str, argv: list[str]) -> str:
        found = self.container(service)
        code, output = found.exec_run(argv, demux=False)
        text = (output or b"").decode(errors="replace")
        if code != 0:
            raise ServiceControlError(f"{self.describe(service)}: {' '.join(argv[:3])} exited {code}: {text[-300:]}")
        return text

    def processes(self, service: str) -> list[ProcessLine]:
        """Every process in the container (read from its /proc: no ps needed in the image)."""
        found = []
        for line in self._exec(service, ["sh", "-c", _PROCESSES_SCRIPT]).splitlines():
            parts = line.split("\t", 2)
            if len(parts) == 3 and parts[0].isdigit() and parts[2].strip():
                found.append(ProcessLine(int(parts[0]), parts[1], parts[2].strip()))
        return found

    def list_dir(self, service: str, path: str) -> list[str]:
        return sorted(line for line in self._exec(service, ["ls", "-1A", path]).splitlines() if line)

    def fetch_file(self, service: str, path: str, into: Path) -> Path:
        """One file of the container, copied to ``into`` (the engine's archive API, as ``docker cp``)."""
        stream, _ = self.container(service).get_archive(path)
        into.parent.mkdir(parents=True, exist_ok=True)
        archive_file = into.with_name(into.name + ".tar")
        try:
            with archive_file.open("wb") as out:  # streamed: a service's jar may be hundreds of MB
                for chunk in stream:
                    out.write(chunk)
            with tarfile.open(archive_file) as archive:
                member = next((m for m in archive.getmembers() if m.isfile()), None)
                extracted = archive.extractfile(member) if member is not None else None
                if extracted is None:
                    raise ServiceControlError(f"{self.describe(service)}: {path} is not a file")
                with into.open("wb") as out:
                    shutil.copyfileobj(extracted, out)
        finally:
            archive_file.unlink(missing_ok=True)
        return into
