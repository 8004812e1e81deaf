"""The operations servers listen with a real backlog: the exporter, and the scheduler in both its roles (maintenance,
and the catalog backups), each started as its own process, its listening socket read back from the kernel (``ss``).

socketserver's default backlog is 5: a burst of health checks and scrapes beyond it waits for a SYN retry (a second
or more). The catalog gate had the same problem and listens with 2048 (tests/services/test_catalog_gate.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lakehouse_platform.probes.support.fixture import free_port
from lakehouse_platform.runtime.config import LISTEN_BACKLOG
from lakehouse_platform.services.operations_config import host_paths, operations_config
from tests.support import REPO_ROOT
from tests.support.stacks import native_spec


def kernel_backlog(port: int) -> int:
    """The backlog of the socket listening on 127.0.0.1:``port``, as the kernel holds it (``ss``'s Send-Q)."""
    if shutil.which("ss") is None:
        pytest.skip("no ss (iproute2) to read the listening socket")
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    (line,) = out.splitlines()
    return int(line.split()[2])


@contextmanager
def serving(argv: list[str], port: int, path: str) -> Iterator[None]:
    process = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    raise AssertionError(f"{argv[2:4]} did not serve: {process.communicate()[0][-2000:]}") from None
                time.sleep(0.2)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.parametrize("role", ["maintenance", "backup"])
def test_the_scheduler_listens_with_a_real_backlog(tmp_path: Path, role: str) -> None:
    spec = native_spec()
    config = operations_config(spec, "backlog", host_paths(spec, str(tmp_path)))
    path = tmp_path / "operations.json"
    path.write_text(config.dump())
    port = free_port()
    with serving([sys.executable, "-m", "lakehouse_platform.runtime", "scheduler", "--config", str(path), "--role", role,
                  "--listen", f"127.0.0.1:{port}"], port, "/healthz"):
        assert kernel_backlog(port) >= LISTEN_BACKLOG >= 1024


def test_the_exporter_listens_with_a_real_backlog(tmp_path: Path) -> None:
    port = free_port()
    config = {"listen_port": port, "catalog_name": "none", "catalog": {"uri": "http://127.0.0.1:1"},
              "default_freshness_s": 3600, "default_retention_s": 86400, "small_file_bytes": 1, "discover": False,
              "refresh_interval_s": 3600, "probe_interval_s": 3600}
    path = tmp_path / "exporter.json"
    path.write_text(json.dumps(config))
    with serving([sys.executable, "-m", "lakehouse_platform.runtime.exporter", "--config", str(path)], port, "/metrics"):
        assert kernel_backlog(port) >= LISTEN_BACKLOG >= 1024
