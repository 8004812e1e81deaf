"""Process identity and stopping: a pid plus its kernel start time, a service's whole process tree.

Processes are never matched by name, and a pid only counts as ours when its create_time matches the
recorded one, so a reused pid is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from lakehouse_platform.providers import poll
from lakehouse_platform.targets.native.local_service.errors import LocalServiceError

# After SIGKILL a process is gone within milliseconds unless it is stuck in the kernel (D state).
KILL_WAIT_S = 5.0
# create_time is derived from boot time + start ticks; compare with a small tolerance so a
# float that went through JSON/protobuf still matches, while a reused pid (started later) never does.
CREATE_TIME_TOLERANCE_S = 0.01



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


def remember_spawned(popen: subprocess.Popen) -> None:
    """Keep the handle of a process this Python process spawned (see ``_SPAWNED``)."""
    with _SPAWNED_LOCK:
        _SPAWNED[popen.pid] = popen


def reap(pid: int) -> int | None:
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
            reap(proc.pid)
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
            reap(pid)
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
        reap(record.pid)
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
    reap(record.pid)
    _wait_released(signalled, KILL_WAIT_S)
    with _SPAWNED_LOCK:
        _SPAWNED.pop(record.pid, None)
    return sorted(signalled)
