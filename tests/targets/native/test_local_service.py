"""Tests of the native target's LocalService provider against real local processes.

Nothing is mocked: each test starts real processes through the provider methods (or the plain
functions under them) and checks what happened to them with psutil. Every process a test starts
is stopped by the ``harness`` fixture's finalizer, whatever the test's outcome.
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import resource
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pulumi
import pytest
import requests
from pulumi.output import Unknown
from pulumi.runtime import rpc

from lakehouse_platform.runtime import watchdog
from lakehouse_platform.targets.native import local_service as ls
from tests.support import REPO_ROOT

PY = sys.executable


def free_port() -> int:
    """A port that is free right now (the kernel's pick for an ephemeral bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (an unreaped zombie has exited too)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def secret(value: Any) -> dict[str, Any]:
    """A value as the Pulumi RPC layer wraps a secret."""
    return rpc.wrap_rpc_secret(value)


class Harness:
    """Builds service inputs in a temp dir, drives the provider, and remembers every process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.provider = ls.LocalServiceProvider()
        self.records: set[ls.ProcessRecord] = set()
        self.pid_files: set[Path] = set()

    def props(self, service: str = "web", **overrides: Any) -> dict[str, Any]:
        """Inputs for a `python -m http.server` service that answers /status.json like Trino."""
        port = overrides.pop("port", None) or free_port()
        www = self.root / service / "www"
        www.mkdir(parents=True, exist_ok=True)
        (www / "status.json").write_text(json.dumps({"starting": False}))
        props: dict[str, Any] = {
            "service": service,
            "argv": [PY, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
            "env": {"GREETING": "hello"},
            "cwd": str(www),
            "data_dir": str(self.root / service / "data"),
            "log_file": str(self.root / service / "logs" / f"{service}.log"),
            "files": {},
            "ports": [port],
            "health": {
                "kind": "http",
                "url": f"http://127.0.0.1:{port}/status.json",
                "expect_status": 200,
                "json_field": "starting",
                "json_expect": False,
            },
            "health_timeout_s": 10.0,
            "stop_grace_s": 2.0,
            "setup": [],
        }
        props.update(overrides)
        self.pid_files.add(Path(props["data_dir"]) / ls.PID_FILE_NAME)
        return props

    def track(self, outs: dict[str, Any]) -> dict[str, Any]:
        if outs.get("pid"):
            self.records.add(ls.ProcessRecord(int(outs["pid"]), float(outs["create_time"])))
        return outs

    def create(self, props: dict[str, Any]) -> dict[str, Any]:
        result = self.provider.create(props)
        assert result.id == props["service"]
        return self.track(result.outs)

    def update(self, olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
        return self.track(self.provider.update(news["service"], olds, news).outs)

    def cleanup(self) -> None:
        records = set(self.records)
        records.update(r for r in (ls.ProcessRecord.from_pid_file(p) for p in self.pid_files) if r)
        for record in records:
            ls.stop_process_tree(record, grace_s=0.2)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    try:
        yield h
    finally:
        h.cleanup()


# ------------------------------------------------------------------------------------------
# create / delete
# ------------------------------------------------------------------------------------------


def test_create_runs_a_healthy_detached_service_and_delete_stops_it(harness: Harness) -> None:
    conf = harness.root / "web" / "conf" / "app.conf"
    props = harness.props(files={str(conf): "answer=42\n"})
    outs = harness.create(props)

    pid = outs["pid"]
    proc = psutil.Process(pid)
    assert outs["alive"] is True and outs["started_at"]
    assert abs(proc.create_time() - outs["create_time"]) < 0.01
    # Outputs echo the inputs.
    for key in ("service", "argv", "env", "cwd", "data_dir", "log_file", "files", "ports", "health"):
        assert outs[key] == props[key], key
    # Really serving, and detached: own session, not in our process group, stdin from /dev/null.
    port = props["ports"][0]
    assert requests.get(f"http://127.0.0.1:{port}/status.json", timeout=2).json() == {"starting": False}
    assert os.getsid(pid) == pid and os.getpgid(pid) == pid != os.getpgid(0)
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    # The pid file carries pid and create_time; config files are written 0600.
    assert ls.ProcessRecord.from_pid_file(Path(props["data_dir"]) / ".pid") == ls.ProcessRecord(pid, outs["create_time"])
    assert conf.read_text() == "answer=42\n"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600
    # The service's own output goes to the log.
    assert "starting service 'web'" in Path(props["log_file"]).read_text()

    harness.provider.delete("web", outs)

    assert gone(pid)
    assert ls.port_is_free(port)
    assert Path(props["data_dir"]).is_dir(), "data_dir is the service's state and must be kept"
    assert not (Path(props["data_dir"]) / ".pid").exists()
    assert not conf.exists(), "rendered files (possibly secret) are removed"
    harness.provider.delete("web", outs)  # idempotent: nothing left to stop


def test_port_in_use_is_refused_naming_port_service_and_owner(harness: Harness) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        props = harness.props("trino", port=port)

        with pytest.raises(ls.LocalServiceError) as err:
            harness.create(props)

    message = str(err.value)
    assert f"service 'trino': port {port} on 127.0.0.1 is already in use (by pid {os.getpid()} cmd " in message
    assert Path(psutil.Process().cmdline()[0]).name in message  # the owner's command line (this test's process)
    assert not (Path(props["data_dir"]) / ".pid").exists(), "nothing was started"


def test_process_that_exits_immediately_fails_with_its_log_tail(harness: Harness) -> None:
    props = harness.props(
        "crashy",
        argv=[PY, "-c", "import sys; [print('noise', i) for i in range(100)]; print('FATAL: bad config xyz'); sys.exit(3)"],
        health={"kind": "tcp", "host": "127.0.0.1", "port": free_port()},
    )
    start = time.monotonic()
    with pytest.raises(ls.LocalServiceError) as err:
        harness.create(props)

    message = str(err.value)
    assert time.monotonic() - start < 5, "a dead process must not wait out the health timeout"
    assert "service 'crashy'" in message and "exited with code 3 before becoming healthy" in message
    assert "FATAL: bad config xyz" in message
    tail = message.split("---\n", 1)[1].splitlines()
    assert len(tail) == ls.LOG_TAIL_LINES and "noise 0" not in message


def test_unhealthy_service_times_out_and_is_stopped(harness: Harness) -> None:
    port = free_port()
    token = f"sleepy-{os.getpid()}-{id(harness)}"  # tells our process from those of parallel runs
    props = harness.props(
        "sleepy",
        argv=[PY, "-c", "import time; print('warming up', flush=True); time.sleep(60)", token],
        health={"kind": "tcp", "host": "127.0.0.1", "port": port},
        health_timeout_s=1.0,
    )
    with pytest.raises(ls.LocalServiceError) as err:
        harness.create(props)

    message = str(err.value)
    assert "service 'sleepy': not healthy within 1s" in message and f"127.0.0.1:{port}" in message
    assert "warming up" in message
    record = ls.ProcessRecord.from_pid_file(Path(props["data_dir"]) / ".pid")
    assert record is None, "the failed process was stopped and its pid file removed"
    assert not [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or []) and not gone(p.pid)]


# A service that ignores SIGTERM, with a child that ignores it too and a double-forked daemon
# (reparented away from the tree, but still in the service's session).
STUBBORN = r"""
import os, signal, socket, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
port, pid_list = int(sys.argv[1]), sys.argv[2]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
r, w = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode()); os.close(w)
        time.sleep(600)
    os._exit(0)
os.wait()
os.close(w)
daemon = int(os.read(r, 32))
with open(pid_list, "w") as fh:
    fh.write(f"{child.pid} {daemon}\n")
server = socket.socket(); server.bind(("127.0.0.1", port)); server.listen()
print("stubborn up", flush=True)
time.sleep(600)
"""


def test_delete_kills_after_grace_and_leaves_no_child(harness: Harness) -> None:
    port = free_port()
    pid_list = harness.root / "pids.txt"
    props = harness.props(
        "stubborn",
        argv=[PY, "-c", STUBBORN, str(port), str(pid_list)],
        health={"kind": "tcp", "host": "127.0.0.1", "port": port},
        stop_grace_s=1.0,
    )
    outs = harness.create(props)
    child, daemon = (int(x) for x in pid_list.read_text().split())
    pids = [outs["pid"], child, daemon]
    assert psutil.Process(daemon).ppid() != outs["pid"], "the daemon escaped the process tree"
    assert all(not gone(p) for p in pids)

    start = time.monotonic()
    harness.provider.delete("stubborn", outs)
    elapsed = time.monotonic() - start

    assert all(gone(p) for p in pids), [p for p in pids if not gone(p)]
    assert elapsed >= 1.0, "SIGTERM is ignored, so only SIGKILL after the grace period ends it"
    assert elapsed < 1.0 + ls.KILL_WAIT_S
    assert "stopped service 'stubborn'" in Path(props["log_file"]).read_text()


def test_a_reused_pid_is_never_signalled() -> None:
    bystander = subprocess.Popen(["sleep", "30"], start_new_session=True)
    # Reaped the moment it exits (the provider waits for a stopped pid to be released, and only reaps its own).
    reaper = threading.Thread(target=bystander.wait, daemon=True)
    reaper.start()
    try:
        real = psutil.Process(bystander.pid).create_time()
        impostor = ls.ProcessRecord(bystander.pid, real - 100.0)  # same pid, other process
        assert not ls.process_matches(impostor)
        assert ls.service_processes(impostor) == []
        assert ls.stop_process_tree(impostor, grace_s=0.1) == []
        assert bystander.poll() is None, "a process with another create_time must survive"
        assert ls.stop_process_tree(ls.ProcessRecord(bystander.pid, real), grace_s=1.0) == [bystander.pid]
        reaper.join(timeout=2)
        assert bystander.returncode == -signal.SIGTERM
    finally:
        if bystander.poll() is None:
            bystander.kill()
            bystander.wait()


def test_create_stops_an_orphan_recorded_in_the_pid_file(harness: Harness) -> None:
    props = harness.props("orphaned")
    first = harness.create(props)
    # Pulumi lost track of it (interrupted run): a new create must not fail on its own orphan.
    second = harness.create(props)
    assert gone(first["pid"])
    assert not gone(second["pid"]) and second["pid"] != first["pid"]


# ------------------------------------------------------------------------------------------
# diff / update / read
# ------------------------------------------------------------------------------------------


def recorded(props: dict[str, Any], pid: int | None = None, create_time: float | None = None, alive: bool = True) -> dict[str, Any]:
    """Outputs as the state holds them; by default the service "is" this (live) test process."""
    me = psutil.Process()
    return {
        **props,
        "pid": me.pid if pid is None else pid,
        "create_time": me.create_time() if create_time is None else create_time,
        "started_at": "2024-01-01T00:00:00+00:00",
        "alive": alive,
        "__provider": "serialized",
    }


def test_diff_same_inputs_is_no_change(harness: Harness) -> None:
    props = harness.props()
    result = harness.provider.diff("web", recorded(props), {**props, "__provider": "serialized"})
    assert result.changes is False and result.replaces == []


def test_new_provider_code_is_an_update_that_restarts_nothing(harness: Harness) -> None:
    """An upgrade's first `up` records the new code in the state, so a later destroy runs it; the process stays."""
    props = harness.props()
    outs = harness.create(props)
    olds = {**outs, "__provider": "the previous release's code"}
    news = {**props, "__provider": "this release's code"}
    result = harness.provider.diff("web", olds, news)
    assert result.changes is True and result.replaces == []
    assert harness.provider.diff("web", olds, {**props, "__provider": olds["__provider"]}).changes is False
    updated = harness.provider.update("web", olds, news).outs
    assert updated["pid"] == outs["pid"] and updated["create_time"] == outs["create_time"]


def test_diff_compares_by_value_across_protobuf_numbers_and_secrets(harness: Harness) -> None:
    props = harness.props(env={"TOKEN": "s3cret"}, files={"/tmp/x.conf": "pw=1"}, ulimit_nofile=4096)
    olds = recorded(props)
    olds["ports"] = [float(p) for p in props["ports"]]  # what a Struct gives back
    olds["ulimit_nofile"] = 4096.0
    news = {**props, "env": {"TOKEN": secret("s3cret")}, "files": secret({"/tmp/x.conf": "pw=1"})}
    assert harness.provider.diff("web", olds, news).changes is False
    changed = {**news, "env": {"TOKEN": secret("rotated")}}
    assert harness.provider.diff("web", olds, changed).changes is True


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("env", {"GREETING": "bonjour"}),
        ("argv", [PY, "-m", "http.server", "9"]),
        ("files", {"/tmp/new.conf": "x"}),
        ("health", {"kind": "tcp", "port": 1}),
        ("ports", [1]),
        ("cwd", "/"),
        ("run_as_user", "nobody"),
        ("health_timeout_s", 99.0),
    ],
)
def test_diff_changed_input_is_an_in_place_update(harness: Harness, key: str, value: Any) -> None:
    props = harness.props()
    result = harness.provider.diff("web", recorded(props), {**props, key: value})
    assert result.changes is True and result.replaces == []


def test_diff_unknown_value_during_preview_is_a_change(harness: Harness) -> None:
    props = harness.props()
    result = harness.provider.diff("web", recorded(props), {**props, "env": {"GREETING": Unknown()}})
    assert result.changes is True


def test_a_moved_data_dir_is_an_update_that_restarts_on_the_moved_data(harness: Harness) -> None:
    """``make up`` moves a stack's data before ``pulumi up``; the service then restarts there, in place: no
    replacement, whose delete would run the provider code of the release that recorded the resource."""
    props = harness.props()
    outs = harness.create(props)
    (Path(props["data_dir"]) / "kept").write_text("the service's state")
    moved = str(harness.root / "moved" / "data")
    news = {**props, "data_dir": moved}
    diff = harness.provider.diff("web", outs, news)
    assert diff.changes is True and diff.replaces == []
    # What relocation does: the service stopped by its record, then its directory renamed.
    ls.stop_service(ls.ServiceInputs.from_props(props), ls.ProcessRecord(outs["pid"], outs["create_time"]))
    Path(moved).parent.mkdir(parents=True)
    os.replace(props["data_dir"], moved)
    harness.pid_files.add(Path(moved) / ls.PID_FILE_NAME)

    updated = harness.update(outs, news)
    assert updated["alive"] is True and updated["pid"] != outs["pid"] and updated["data_dir"] == moved
    assert ls.ProcessRecord.from_pid_file(Path(moved) / ls.PID_FILE_NAME) == ls.ProcessRecord(updated["pid"], updated["create_time"])
    assert (Path(moved) / "kept").read_text() == "the service's state"
    assert requests.get(f"http://127.0.0.1:{props['ports'][0]}/status.json", timeout=2).status_code == 200
    assert harness.provider.diff("web", updated, news).changes is False


def test_a_renamed_service_is_a_replacement_deleting_first(harness: Harness) -> None:
    props = harness.props()
    result = harness.provider.diff("web", recorded(props), {**props, "service": "web2"})
    assert result.changes is True and result.replaces == ["service"] and result.delete_before_replace is True


def test_diff_dead_service_is_a_change(harness: Harness) -> None:
    props = harness.props()
    me = psutil.Process()
    assert harness.provider.diff("web", recorded(props, alive=False, pid=0, create_time=0.0), props).changes is True
    # Recorded pid alive, but it is another process (pid reuse): dead too.
    assert harness.provider.diff("web", recorded(props, create_time=me.create_time() - 50), props).changes is True
    exited = subprocess.Popen(["true"])
    exited.wait()
    assert harness.provider.diff("web", recorded(props, pid=exited.pid, create_time=time.time()), props).changes is True


def test_refresh_of_a_killed_service_reports_it_dead_and_update_restarts_it(harness: Harness) -> None:
    props = harness.props()
    outs = harness.create(props)
    assert harness.provider.read("web", outs).outs == outs, "a live service reads back unchanged"

    os.kill(outs["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 15  # generous: the machine may be busy with a JVM build or test
    while not gone(outs["pid"]) and time.monotonic() < deadline:
        ls.reap(outs["pid"])
        time.sleep(0.02)

    refreshed = harness.provider.read("web", outs)
    assert refreshed.id == "web"
    assert refreshed.outs["alive"] is False and refreshed.outs["pid"] == 0
    assert refreshed.outs["started_at"] == outs["started_at"]
    assert {k: refreshed.outs[k] for k in ls.INPUT_KEYS} == {k: outs[k] for k in ls.INPUT_KEYS}

    diff = harness.provider.diff("web", refreshed.outs, props)
    assert diff.changes is True and diff.replaces == []

    restarted = harness.update(refreshed.outs, props)
    assert restarted["alive"] is True and restarted["pid"] not in (0, outs["pid"])
    port = props["ports"][0]
    assert requests.get(f"http://127.0.0.1:{port}/status.json", timeout=2).status_code == 200
    assert harness.provider.diff("web", restarted, props).changes is False
    harness.provider.delete("web", restarted)
    assert gone(restarted["pid"])


def test_update_restarts_only_when_the_process_depends_on_the_change(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "must-not-leak")
    props = harness.props(files={str(harness.root / "web" / "a.conf"): "v=1", str(harness.root / "web" / "b.conf"): "v=1"})
    outs = harness.create(props)
    environ = psutil.Process(outs["pid"]).environ()
    assert environ["GREETING"] == "hello" and "PULUMI_CONFIG_PASSPHRASE" not in environ

    # Only recorded: same process.
    same = harness.update(outs, {**props, "health_timeout_s": 30.0, "stop_grace_s": 1.0})
    assert same["pid"] == outs["pid"] and same["health_timeout_s"] == 30.0 and same["started_at"] == outs["started_at"]

    # env and files change: restart with the new values, dropped files removed.
    new_files = {str(harness.root / "web" / "a.conf"): "v=2"}
    news = {**props, "env": {"GREETING": "bonjour"}, "files": new_files, "stop_grace_s": 1.0}
    restarted = harness.update(same, news)
    assert restarted["pid"] != outs["pid"] and gone(outs["pid"])
    assert psutil.Process(restarted["pid"]).environ()["GREETING"] == "bonjour"
    assert (harness.root / "web" / "a.conf").read_text() == "v=2"
    assert not (harness.root / "web" / "b.conf").exists()
    assert harness.provider.diff("web", restarted, news).changes is False


# ------------------------------------------------------------------------------------------
# setup, secrets, users, limits
# ------------------------------------------------------------------------------------------


def test_setup_runs_once_and_a_failing_step_shows_its_log(harness: Harness) -> None:
    counter = harness.root / "setup-count"
    step = [PY, "-c", f"print('init ran'); open({str(counter)!r}, 'a').write('x')"]
    props = harness.props("db", setup=[step])
    outs = harness.create(props)
    assert counter.read_text() == "x"
    assert "init ran" in Path(props["log_file"]).read_text()
    harness.provider.delete("db", outs)
    harness.create(props)
    assert counter.read_text() == "x", "setup runs only while its marker is missing"

    bad = harness.props("db2", setup=[[PY, "-c", "import sys; print('initdb: boom'); sys.exit(2)"]])
    with pytest.raises(ls.LocalServiceError) as err:
        harness.create(bad)
    message = str(err.value)
    assert "service 'db2': setup step 1" in message and "exit code 2" in message and "initdb: boom" in message
    assert not (Path(bad["data_dir"]) / ls.SETUP_MARKER_NAME).exists()
    assert not (Path(bad["data_dir"]) / ".pid").exists(), "the service was not started"


def test_secrets_reach_the_process_but_never_the_log(harness: Harness) -> None:
    token, password = "tok-5f2a9c-secret", "pw-91b7e3-secret"
    conf = harness.root / "web" / "secret.conf"
    props = harness.props(env={"API_TOKEN": token}, files={str(conf): f"password={password}\n"})
    # Make the create fail too, so the error path is covered as well.
    failing = harness.props("web2", env={"API_TOKEN": token}, argv=[PY, "-c", "raise SystemExit(1)"])
    outs = harness.create(props)
    with pytest.raises(ls.LocalServiceError) as err:
        harness.create(failing)

    assert psutil.Process(outs["pid"]).environ()["API_TOKEN"] == token
    assert conf.read_text() == f"password={password}\n" and stat.S_IMODE(conf.stat().st_mode) == 0o600
    for log in (props["log_file"], failing["log_file"]):
        text = Path(log).read_text()
        assert token not in text and password not in text
    assert token not in str(err.value)
    assert ls.resource_options(None).additional_secret_outputs == ["env", "files"]
    merged = ls.resource_options(pulumi.ResourceOptions(protect=True))
    assert merged.protect is True and merged.additional_secret_outputs == ["env", "files"]


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_run_as_user_and_ulimit(harness: Harness) -> None:
    nobody = pwd.getpwnam("nobody")
    # tmp_path lives under a 0700 directory that `nobody` cannot traverse.
    base = Path(tempfile.mkdtemp(prefix="local-service-user-"))
    base.chmod(0o755)
    try:
        props = harness.props(
            "pg",
            argv=["sleep", "30"],
            cwd="/",
            data_dir=str(base / "data"),
            log_file=str(base / "logs" / "pg.log"),
            files={str(base / "data" / "pg.conf"): "x=1"},
            ports=[],
            health={"kind": "command", "argv": ["true"]},
            run_as_user="nobody",
            # The hard limit: what Trino asks for natively; always allowed as a soft limit.
            ulimit_nofile=resource.getrlimit(resource.RLIMIT_NOFILE)[1],
        )
        harness.pid_files.add(base / "data" / ".pid")
        outs = harness.create(props)
        # The service runs as the user; its watchdog (the recorded pid) as the provider's own user.
        assert outs["service_pid"] != outs["pid"] and psutil.Process(outs["pid"]).uids().real == os.geteuid()
        proc = psutil.Process(outs["service_pid"])
        assert proc.uids().real == nobody.pw_uid and proc.gids().real == nobody.pw_gid
        assert proc.gids().real not in os.getgroups() or nobody.pw_gid in os.getgroups()
        # /proc/PID/limits rather than prlimit(2), which needs CAP_SYS_RESOURCE on another user's process.
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        soft = next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3]
        assert int(soft) >= props["ulimit_nofile"]  # at least what the service asked for
        assert proc.environ()["HOME"] == nobody.pw_dir
        assert (base / "data").stat().st_uid == nobody.pw_uid
        assert (base / "data" / "pg.conf").stat().st_uid == nobody.pw_uid
        harness.provider.delete("pg", outs)
        assert gone(outs["pid"]) and gone(outs["service_pid"])
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_ulimit_above_the_hard_limit(harness: Harness) -> None:
    """Raised when this process may (CAP_SYS_RESOURCE), else a clear error before anything starts."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    props = harness.props("wide", ulimit_nofile=hard + 1024)
    if ls.can_raise_hard_limits():
        outs = harness.create(props)
        assert psutil.Process(outs["pid"]).rlimit(psutil.RLIMIT_NOFILE) == (hard + 1024, hard + 1024)
    else:
        with pytest.raises(ls.LocalServiceError, match=f"ulimit_nofile {hard + 1024} exceeds the hard limit {hard}"):
            harness.create(props)
        assert not (Path(props["data_dir"]) / ".pid").exists()


# ------------------------------------------------------------------------------------------
# pure helpers and Pulumi plumbing
# ------------------------------------------------------------------------------------------


def test_check_reports_invalid_inputs_and_skips_unknowns(harness: Harness) -> None:
    props = harness.props()
    assert harness.provider.check({}, props).failures == []
    bad = {**props, "argv": [], "ports": [70000], "data_dir": "relative", "health": {"kind": "smoke"}}
    failures = {f.property: f.reason for f in harness.provider.check({}, bad).failures}
    assert set(failures) == {"argv", "ports", "data_dir", "health"}
    assert "unknown kind 'smoke'" in failures["health"]
    assert harness.provider.check({}, {**props, "env": Unknown(), "argv": Unknown()}).failures == []


def test_tail_log_returns_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_text("".join(f"line {i} {'x' * 300}\n" for i in range(2000)))
    tail = ls.tail_log(log, 40).splitlines()
    assert len(tail) == 40 and tail[0].startswith("line 1960 ") and tail[-1].startswith("line 1999 ")
    assert "unreadable" in ls.tail_log(tmp_path / "missing.log")


def test_serialized_provider_loads_by_reference_in_a_provider_process() -> None:
    """The engine's provider process (the venv's Python, no PYTHONPATH, another directory) imports the provider
    from the installed package."""
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(ls.LocalServiceProvider())
    assert blob == serialize_provider(ls.LocalServiceProvider()), "deterministic, or every up shows a diff"
    code = (
        "import base64, sys, dill\n"
        "p = dill.loads(base64.b64decode(sys.stdin.read()))\n"
        "print(type(p).__name__, p.diff('x', {'alive': False}, {}).changes)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([PY, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["LocalServiceProvider", "True"]
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"


def test_post_start_steps_run_after_health_and_failure_stops_the_service(tmp_path):
    """post_start runs once the service is healthy; a failing step leaves no process behind."""
    import sys as _sys

    from lakehouse_platform.targets.native import local_service as ls

    port = _free_port_for_post_start()
    marker = tmp_path / "post-start-ran"
    props = {
        "service": "web",
        "argv": [_sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        "cwd": str(tmp_path),
        "data_dir": str(tmp_path / "data"),
        "log_file": str(tmp_path / "web.log"),
        "health": {"kind": "tcp", "host": "127.0.0.1", "port": port},
        "ports": [port],
        "health_timeout_s": 20,
        "stop_grace_s": 2,
        "post_start": [[_sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ok')"]],
    }
    spec = ls.ServiceInputs.from_props(props)
    record = ls.start_service(spec)
    try:
        assert marker.read_text() == "ok"
    finally:
        ls.stop_service(spec, record)
    failing = ls.ServiceInputs.from_props({**props, "post_start": [[_sys.executable, "-c", "raise SystemExit(3)"]]})
    try:
        ls.start_service(failing)
    except ls.LocalServiceError as exc:
        assert "post-start step 1" in str(exc) and "exit code 3" in str(exc)
    else:
        raise AssertionError("a failing post-start step was accepted")
    assert ls.port_is_free(port), "the service was left running after its post-start step failed"


def _free_port_for_post_start() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:g}s: {what}")
        time.sleep(0.1)


def test_a_crashed_service_comes_back_by_itself_with_backoff(harness: Harness) -> None:
    props = harness.props("web", restart_policy={"max_restarts": 3, "window_s": 60, "backoff_initial_s": 0.5,
                                                 "backoff_max_s": 2})
    outs = harness.create(props)
    port, first = props["ports"][0], outs["service_pid"]
    assert outs["supervisor_state"] == "running" and outs["restarts"] == 0 and first not in (0, outs["pid"])

    os.kill(first, signal.SIGKILL)  # the service dies behind everyone's back; its watchdog does not
    _wait_for(lambda: harness.provider.read("web", outs).outs["service_pid"] not in (0, first), 20,
              "the watchdog restarted the service")
    _wait_for(lambda: ls.port_is_free(port) is False, 20, "the restarted service listens again")
    assert requests.get(f"http://127.0.0.1:{port}/status.json", timeout=2).status_code == 200
    again = harness.provider.read("web", outs).outs
    assert again["alive"] is True and again["pid"] == outs["pid"] and again["restarts"] == 1
    log = Path(props["log_file"]).read_text()
    assert "service exited with code -9; restart 1/3 in 0.5s" in log
    assert harness.provider.diff("web", again, props).changes is False, "a healed service needs no `pulumi up`"


def test_a_service_that_keeps_crashing_is_given_up_after_its_limit(harness: Harness) -> None:
    port = free_port()
    flag = harness.root / "crash-from-now-on"
    # Serves until the flag exists, then crashes within a second of every start.
    script = (f"import os,http.server,threading,time\n"
              f"s=http.server.HTTPServer(('127.0.0.1',{port}),http.server.SimpleHTTPRequestHandler)\n"
              f"threading.Thread(target=s.serve_forever,daemon=True).start()\n"
              f"while not os.path.exists({str(flag)!r}): time.sleep(0.1)\n"
              f"time.sleep(0.3); os._exit(3)\n")
    props = harness.props("flaky", port=port, argv=[PY, "-c", script],
                          health={"kind": "tcp", "port": port},
                          restart_policy={"max_restarts": 2, "window_s": 60, "backoff_initial_s": 0.2,
                                          "backoff_max_s": 0.4})
    outs = harness.create(props)
    flag.write_text("now")
    _wait_for(lambda: not ls.process_matches(ls.ProcessRecord(outs["pid"], outs["create_time"])), 30,
              "the watchdog gave up")
    refreshed = harness.provider.read("flaky", outs).outs
    assert refreshed["alive"] is False and refreshed["pid"] == 0
    status = watchdog.read_status(props["data_dir"])
    assert status["state"] == "gave-up" and status["restarts"] == 2 and status["last_exit_code"] == 3
    assert "2 restarts in the last 60s: giving up" in Path(props["log_file"]).read_text()
    assert harness.provider.diff("flaky", refreshed, props).changes is True, "the next `pulumi up` restarts it"


def test_the_service_stops_with_its_stop_signal_and_never_outlives_its_watchdog(harness: Harness) -> None:
    port = free_port()
    got = harness.root / "signals-received"
    # Serves; on SIGINT notes it once and exits (a second SIGINT, the watchdog's forward racing the stop's own,
    # is ignored); SIGTERM is ignored (it must not be what stops this one).
    script = (f"import http.server,signal,sys,threading\n"
              f"def note(n, _):\n    signal.signal(n, signal.SIG_IGN)\n    open({str(got)!r},'a').write(signal.Signals(n).name+'\\n'); sys.exit(0)\n"
              f"signal.signal(signal.SIGINT, note); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              f"s=http.server.HTTPServer(('127.0.0.1',{port}),http.server.SimpleHTTPRequestHandler)\n"
              f"threading.Thread(target=s.serve_forever,daemon=True).start()\n"
              f"threading.Event().wait()\n")
    props = harness.props("pg-like", port=port, argv=[PY, "-c", script], health={"kind": "tcp", "port": port},
                          stop_signal="SIGINT", stop_grace_s=5.0)
    outs = harness.create(props)
    service = outs["service_pid"]

    os.kill(outs["pid"], signal.SIGKILL)  # the watchdog dies (OOM killer, kill -9), not the service
    _wait_for(lambda: gone(service), 10, "the service followed its watchdog")
    assert got.read_text() == "SIGINT\n"
    _wait_for(lambda: ls.port_is_free(port), 10, "its port is free for the restart")

    dead = harness.provider.read("pg-like", outs).outs
    again = harness.update(dead, props)
    assert again["alive"] is True and again["service_pid"] not in (0, service)
    started = time.monotonic()
    harness.provider.delete("pg-like", again)
    assert got.read_text() == "SIGINT\nSIGINT\n" and time.monotonic() - started < 4, "stopped by SIGINT, not SIGKILL"


def test_pre_stop_runs_while_the_old_process_still_serves_and_a_failure_does_not_block(harness: Harness) -> None:
    """An update's restart first runs ``pre_stop`` (Flink's managers drain the job with a savepoint), with the old
    process still answering; a failing step is logged and the update goes on. A change of ``pre_stop`` alone is
    recorded without a restart."""
    port = free_port()
    seen = harness.root / "seen.txt"
    drain = [PY, "-c", "import sys, urllib.request; open(sys.argv[2], 'w').write(str(urllib.request.urlopen("
             "sys.argv[1], timeout=5).status))", f"http://127.0.0.1:{port}/status.json", str(seen)]
    props = harness.props(port=port, pre_stop=[drain])
    outs = harness.create(props)
    assert not seen.exists()  # never on create
    recorded = harness.update(outs, {**props, "pre_stop": [drain, [PY, "-c", "pass"]]})
    assert recorded["pid"] == outs["pid"] and not seen.exists()
    news = {**props, "env": {"GREETING": "bonjour"}, "pre_stop": [[PY, "-c", "raise SystemExit(3)"], drain]}
    restarted = harness.update(recorded, news)
    assert restarted["pid"] != outs["pid"] and not seen.exists()  # the first step failed: the rest skipped, logged
    assert "pre-stop failed, stopping anyway" in Path(props["log_file"]).read_text()
    again = harness.update(restarted, {**news, "env": {"GREETING": "hallo"}, "pre_stop": [drain]})
    assert again["pid"] != restarted["pid"] and seen.read_text() == "200"  # it reached the old process
