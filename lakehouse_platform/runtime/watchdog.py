"""The watchdog that keeps one native service running: restart on crash, with backoff and a limit.

``LocalService`` starts ``python watchdog.py <config.json>`` as the session leader of a service; the
watchdog starts the service (as its run-as user), waits for it, and when it exits without being
asked to, starts it again after an exponential backoff (``backoff_initial_s`` doubling up to
``backoff_max_s``). More than ``max_restarts`` restarts within ``window_s`` means the service cannot
stay up: the watchdog gives up and exits, so the next ``pulumi refresh`` reports the service dead.
SIGTERM (or SIGINT) stops the service, with its ``stop_signal``, and then the watchdog, with no
restart. The service gets the same ``stop_signal`` if the watchdog itself dies (killed, OOM): it
is started with that as its parent-death signal, so it never runs on unsupervised and unrecorded,
holding its ports and locks against the restart the next ``pulumi up`` makes.

Until the provider says the service is up (SIGUSR1, sent once its health check and post-start steps
passed), the watchdog only mirrors it: a service that exits while starting makes the watchdog exit
with the same code, so a broken configuration fails the deployment at once with its log tail
instead of being retried behind the operator's back.

The service's log is kept bounded (``log_rotation``: ``max_bytes``, ``keep``): every few seconds the
watchdog looks at its size, and past ``max_bytes`` copies it to ``<log>.1`` (the older copies shifted to
``.2`` ... ``.keep``, the oldest deleted) and truncates it in place. The service keeps its file open in
append mode, so its next line lands at the start of the emptied file: nothing needs reopening, whatever
the service (logrotate's copytruncate). A line written between the copy and the truncation is lost.

Its state is in ``<data_dir>/.watchdog.json`` (``read_status``): the service's pid, restarts, the
last exit code and time, and ``state`` (``running`` | ``backoff`` | ``gave-up`` | ``stopped``). The
stack outputs and the metrics exporter read it.

Standard library only, and no import of the project: LocalService writes this module's source into the
service's data dir and runs it there with the base interpreter, so a running service never depends on a checkout.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STATUS_FILE = ".watchdog.json"
CONFIG_FILE = ".watchdog-config.json"
#: The copy of this file the service's watchdog runs from, in its data dir (LocalService writes it at each start).
SCRIPT_FILE = ".watchdog.py"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: How often the log's size is looked at (the service runs on meanwhile; its exit is noticed at once).
LOG_CHECK_S = 5.0


def read_status(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The watchdog's state for a service's data dir ({} when it never ran)."""
    try:
        status: dict[str, Any] = json.loads((Path(data_dir) / STATUS_FILE).read_text())
        return status
    except (OSError, ValueError):
        return {}


class Watchdog:
    """Runs one service and restarts it on crash (see the module docstring)."""

    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.policy = config["restart"]
        self.status_path = Path(config["data_dir"]) / STATUS_FILE
        self.stop_signal = signal.Signals[config.get("stop_signal", "SIGTERM")]
        self.libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork: preexec_fn only calls it
        self.stopping = False
        self.supervising = False
        self.child: subprocess.Popen[bytes] | None = None
        self.restarts: list[float] = []  # times of restarts, for the window
        self.status: dict[str, Any] = {"state": "starting", "restarts": 0, "watchdog_pid": os.getpid()}

    def log(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with open(self.config["log_file"], "a", encoding="utf-8") as fh:
            fh.write(f"[watchdog {stamp}] {message}\n")

    def save(self, **changes: Any) -> None:
        self.status.update(changes, updated_at=time.time())
        tmp = self.status_path.with_name(self.status_path.name + ".tmp")
        tmp.write_text(json.dumps(self.status))
        os.replace(tmp, self.status_path)

    def die_with_watchdog(self) -> None:
        """In the forked child, after its uid change (which would clear it): our death signals it."""
        self.libc.prctl(PR_SET_PDEATHSIG, int(self.stop_signal), 0, 0, 0)
        if os.getppid() != self.status["watchdog_pid"]:  # the watchdog died before prctl took effect
            os.kill(os.getpid(), self.stop_signal)

    def start_child(self) -> None:
        identity = self.config.get("identity") or {}
        with open(self.config["log_file"], "ab") as log:
            # Same session and process group as the watchdog: stopping the session stops both.
            # preexec_fn is safe here: the watchdog is single-threaded.
            self.child = subprocess.Popen(
                self.config["argv"], cwd=self.config["cwd"], stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, close_fds=True, preexec_fn=self.die_with_watchdog,
                user=identity.get("uid"), group=identity.get("gid"), extra_groups=identity.get("groups"),
            )
        self.save(state="running", pid=self.child.pid, started_at=time.time())

    def on_up(self, _signum: int, _frame: Any) -> None:
        self.supervising = True
        self.save(state="running", supervising=True)

    def on_signal(self, signum: int, _frame: Any) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(self.stop_signal)

    def rotate_log(self) -> bool:
        """Copy the log aside and empty it in place when it is past its size (see the module docstring)."""
        rotation = self.config.get("log_rotation") or {}
        limit, keep = int(rotation.get("max_bytes") or 0), int(rotation.get("keep") or 0)
        log = Path(self.config["log_file"])
        try:
            if not limit or log.stat().st_size <= limit:
                return False
            for index in range(keep, 0, -1):
                older = log.with_name(f"{log.name}.{index}")
                if index == keep:
                    older.unlink(missing_ok=True)
                elif older.exists():
                    os.replace(older, log.with_name(f"{log.name}.{index + 1}"))
            if keep:
                shutil.copyfile(log, log.with_name(f"{log.name}.1"))
            os.truncate(log, 0)
        except OSError as exc:  # a full disk must not stop the supervision
            sys.stderr.write(f"watchdog: rotating {log} failed: {exc}\n")
            return False
        self.log(f"log rotated: past {limit} bytes, {keep} older file(s) kept")
        return True

    def wait_child(self) -> int:
        """The service's exit code, rotating its log meanwhile."""
        assert self.child is not None
        while True:
            try:
                return self.child.wait(timeout=LOG_CHECK_S)
            except subprocess.TimeoutExpired:
                self.rotate_log()

    def backoff(self) -> float:
        """Seconds before the next restart: doubling from the initial delay, capped."""
        recent = len(self.restarts)
        return float(min(self.policy["backoff_initial_s"] * 2 ** max(recent - 1, 0), self.policy["backoff_max_s"]))

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.1, deadline - time.monotonic()))

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGUSR1, self.on_up)
        self.start_child()
        while True:
            code = self.wait_child()
            if self.stopping:
                self.save(state="stopped", pid=0, last_exit_code=code, last_exit_at=time.time())
                return 0
            if not self.supervising:  # still starting: fail as the service failed
                self.save(state="failed-to-start", pid=0, last_exit_code=code, last_exit_at=time.time())
                return code if code > 0 else 128 - code
            now = time.time()
            self.restarts = [t for t in self.restarts if now - t < self.policy["window_s"]]
            if len(self.restarts) >= self.policy["max_restarts"]:
                self.log(f"service exited with code {code}; {len(self.restarts)} restarts in the last "
                         f"{self.policy['window_s']:g}s: giving up")
                self.save(state="gave-up", pid=0, last_exit_code=code, last_exit_at=now)
                return 1
            self.restarts.append(now)
            delay = self.backoff()
            self.log(f"service exited with code {code}; restart {len(self.restarts)}/{self.policy['max_restarts']} "
                     f"in {delay:g}s")
            self.save(state="backoff", pid=0, last_exit_code=code, last_exit_at=now,
                      restarts=self.status["restarts"] + 1)
            self.sleep(delay)
            if self.stopping:
                self.save(state="stopped")
                return 0
            self.start_child()


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[1]).read_text())
    return Watchdog(config).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
