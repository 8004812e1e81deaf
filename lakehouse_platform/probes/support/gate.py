"""A catalog gate, and a REST fixture for it to front, as local processes on loopback.

For the gate's tests (``tests/services/test_catalog_gate.py``, ``tests/services/test_catalog_gate_clients.py``) and its benchmark
(``bench/bench_gate.py``). The gate runs as the native target runs it (``python -m
lakehouse_platform.runtime.catalog_gate --config <file>``, its signing key in its environment); its stderr is
kept (``RunningGate.log``). The fixture runs as the native target runs the platform's (the cached
fixture runtime jar behind the loopback launcher, through ``local_service``: detached, pid and
create_time recorded, stopped by that pid) with an explicit heap, but on a SQLite file and a warehouse
directory of its own (HadoopFileIO: no object store needed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lakehouse_platform.model.governance import ROLE_GRANTS
from lakehouse_platform.paths import PACKAGE_PARENT
from lakehouse_platform.probes.support import services
from lakehouse_platform.services.capabilities import REFERENCE_CATALOG

#: A signing key for test gates (the gate wants at least 32 bytes).
SIGNING_KEY = "test-gate-signing-key-0123456789abcdef"
GATE_MODULE = "lakehouse_platform.runtime.catalog_gate"
LISTENING = re.compile(r"listening on ([0-9.]+):(\d+)")


#: The access table of each role's default grants, as the gate's config holds it.
ROLE_ACCESS = {role: {ns: list(actions) for ns, actions in grants.items()} for role, grants in ROLE_GRANTS.items()}


def identities(tokens: Mapping[str, str],
               grants: Mapping[str, Mapping[str, list[str]]] | None = None) -> list[dict[str, Any]]:
    """The gate config's ``identities`` for ``{name: token}``: each with ``grants[name]`` (an access table), else
    the default grants of the role its name is."""
    return [{"name": name, "grants": dict((grants or {}).get(name) or ROLE_ACCESS[name]),
             "token_sha256": hashlib.sha256(token.encode()).hexdigest()} for name, token in tokens.items()]


def gate_env(signing_key: str | None = SIGNING_KEY) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CATALOG_GATE_SIGNING_KEY"}
    env.update({"PYTHONPATH": str(PACKAGE_PARENT), "PYTHONUNBUFFERED": "1"})
    if signing_key is not None:
        env["CATALOG_GATE_SIGNING_KEY"] = signing_key
    return env


def run_gate_once(config: Mapping[str, Any], signing_key: str | None = SIGNING_KEY,
                  timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    """Start a gate that is expected to refuse to start: its exit code and output."""
    with tempfile.TemporaryDirectory(prefix="gate-") as work:
        path = Path(work) / "gate.json"
        path.write_text(json.dumps(config))
        return subprocess.run([sys.executable, "-m", GATE_MODULE, "--config", str(path)], env=gate_env(signing_key),
                              capture_output=True, text=True, timeout=timeout_s, cwd=work, check=False)


@dataclass
class RunningGate:
    url: str
    port: int
    pid: int
    log: list[str] = field(default_factory=list)


@contextlib.contextmanager
def running_gate(config: Mapping[str, Any], signing_key: str | None = SIGNING_KEY,
                 argv: list[str] | None = None, start_timeout_s: float = 30) -> Iterator[RunningGate]:
    """A gate process with ``config`` (``listen_port`` 0: it picks a free port and says which).

    ``argv`` replaces the gate's command (the benchmark runs another build of the gate with it); the
    config file's path is appended after ``--config``.
    """
    with tempfile.TemporaryDirectory(prefix="gate-") as work:
        path = Path(work) / "gate.json"
        path.write_text(json.dumps({"listen_host": "127.0.0.1", "listen_port": 0, **config}))
        command = [*(argv or [sys.executable, "-m", GATE_MODULE]), "--config", str(path)]
        process = subprocess.Popen(command, env=gate_env(signing_key), cwd=work, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        ready = threading.Event()
        found: list[int] = []

        def drain() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                lines.append(line.rstrip("\n"))
                if not found and (match := LISTENING.search(line)):
                    found.append(int(match.group(2)))
                    ready.set()
            ready.set()

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            if not ready.wait(start_timeout_s) or not found:
                raise RuntimeError(f"the gate did not start (exit {process.poll()}):\n" + "\n".join(lines[-20:]))
            port = found[0]
            yield RunningGate(url=f"http://127.0.0.1:{port}", port=port, pid=process.pid, log=lines)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
            reader.join(5)


# -- a REST fixture on local files -------------------------------------------------------------------------


def fixture_runtime() -> Any | None:
    """The default native platform's fixture build from the artifact cache (``make artifacts``), or None: the
    reference catalog's own probe support (``REFERENCE_CATALOG``) says where it is."""
    from lakehouse_platform.config import target_defaults

    reference = services.support(REFERENCE_CATALOG)
    return reference.runtime(target_defaults("native")) if reference is not None else None


def spark_jars() -> list[str] | None:
    """The default native platform's Iceberg jars for Spark (``spark.jars``) from the artifact cache, or None."""
    from lakehouse_platform.artifacts import cache, clients
    from lakehouse_platform.config import target_defaults

    found = cache.lookup(clients.spark_jars_key(target_defaults("native").engines))
    return [str(p) for p in found.classpath] if found is not None else None


@dataclass(frozen=True)
class RunningFixture:
    uri: str
    port: int
    pid: int
    warehouse: str
    log_file: str


@contextlib.contextmanager
def rest_fixture(runtime: Any, work: Path, port: int, heap: str = "-Xmx384m",
                 health_timeout_s: float = 180) -> Iterator[RunningFixture]:
    """A fixture on ``127.0.0.1:port`` whose catalog (SQLite) and tables (``file://``) live under ``work``."""
    from lakehouse_platform.targets.native import local_service as ls

    reference = services.support(REFERENCE_CATALOG)
    assert reference is not None, "no service of the registry is Iceberg's reference catalog"

    warehouse = (work / "warehouse").as_uri() + "/"
    spec = ls.ServiceInputs(
        service="gate-test-fixture",
        argv=[str(runtime.java), heap, "-XX:+ExitOnOutOfMemoryError", "-cp", ":".join(runtime.classpath),
              runtime.main_class],
        cwd=str(work), data_dir=str(work / "data"), log_file=str(work / "fixture.log"),
        env={
            "CATALOG_URI": f"jdbc:sqlite:file:{work / 'catalog.db'}",
            "CATALOG_CLIENTS": "1",  # SQLite serialises writers (as the platform's fixture)
            "CATALOG_JDBC_STRICT__MODE": "true",
            "CATALOG_WAREHOUSE": warehouse,
            "CATALOG_IO__IMPL": "org.apache.iceberg.hadoop.HadoopFileIO",
            "CATALOG_REST_HOST": "127.0.0.1",
            "CATALOG_REST_PORT": str(port),
            **reference.table_default_env(),
        },
        health={"kind": "http", "url": f"http://127.0.0.1:{port}/v1/config"},
        ports=[port], health_timeout_s=health_timeout_s, stop_grace_s=10,
    )
    record = ls.start_service(spec)
    try:
        yield RunningFixture(uri=f"http://127.0.0.1:{port}", port=port, pid=record.pid, warehouse=warehouse,
                             log_file=spec.log_file)
    finally:
        ls.stop_service(spec, record)
