"""The service-control seam (``lakehouse_platform.control.services``) natively, on real processes, and what the probes read
through it (issue 19, item 2); the lab's implementation runs against a real engine in
``tests/lab/test_service_control.py`` (marker lab).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import psutil
import pytest

from lakehouse_platform.control import services
from lakehouse_platform.probes.support.fixture import table_prefix
from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.probes.support.versions import declared_versions
from lakehouse_platform.runtime import recovery, watchdog
from lakehouse_platform.services.rest_fixture import probe as rest_fixture_probe


@pytest.fixture
def service(tmp_path: Path):
    """A running 'service': a shell with a child, recorded as the native target records one (pid, data dir, the
    watchdog's status naming the service's process)."""
    jar = tmp_path / "app" / "iceberg-rest-adapter.jar"
    jar.parent.mkdir()
    with zipfile.ZipFile(jar, "w") as archive:  # a jar named without its version, as the lab's images have it
        archive.writestr("iceberg-build.properties", "git.branch=1.10.x\ngit.build.version=1.10.1\n")
    # argv as a JVM's would read: `... -jar <relative jar>` from its working directory.
    process = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                                "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)",
                                "-jar", "iceberg-rest-adapter.jar"], cwd=jar.parent)
    data_dir = tmp_path / "svc"
    data_dir.mkdir()
    (data_dir / watchdog.STATUS_FILE).write_text(json.dumps({"pid": process.pid, "restarts": 2, "state": "running"}))
    deadline = time.monotonic() + 10
    while not psutil.Process(process.pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    children = psutil.Process(process.pid).children(recursive=True)
    outputs = {"target": "native", "native": {"services": {"rest-fixture": {
        "pid": process.pid, "data_dir": str(data_dir), "memory_budget_bytes": 64 * 2**20}}}}
    yield outputs, process
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.kill()
    process.kill()
    process.wait()


def states(described: list[str], wanted: str) -> set[str]:
    """The states of the processes ``pause`` named ("pid N"), once they all reach ``wanted`` (signals land async)."""
    deadline = time.monotonic() + 5
    while True:
        found = {psutil.Process(int(p.split()[1])).status() for p in described}
        if found == {wanted} or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_the_target_chooses_the_control(service):
    outputs, _ = service
    assert isinstance(services.for_outputs(outputs, "native"), services.NativeServices)
    lab = {"target": "docker", "docker": {"containers": {"rest-fixture": {"name": "book2-rest-fixture"}}}}
    assert services.for_outputs(lab).describe("rest-fixture") == "rest-fixture (container book2-rest-fixture)"
    with pytest.raises(services.Unsupported, match="managed services"):
        services.for_outputs({"target": "aws"})
    with pytest.raises(services.ServiceControlError, match=r"no docker\.containers"):
        services.for_outputs({"target": "docker"})
    with pytest.raises(services.ServiceControlError, match="not a container of this stack"):
        services.for_outputs(lab).name_of("trino")


def test_natively_a_service_is_read_and_hung_by_its_pids(service):
    outputs, process = service
    ctl = services.for_outputs(outputs, None)
    assert ctl.services() == {"rest-fixture": 64 * 2**20}
    now = ctl.instance("rest-fixture")
    assert now.running and now.ident == f"pid {process.pid}" and now.restarts == 2
    memory = ctl.memory("rest-fixture")
    assert memory.processes == 2 and memory.bytes > 1024 * 1024  # the shell and its child, resident
    found = ctl.processes("rest-fixture")
    assert found[0].pid == process.pid and "-jar iceberg-rest-adapter.jar" in found[0].args
    paused = ctl.pause("rest-fixture")
    assert len(paused) == 2
    assert states(paused, psutil.STATUS_STOPPED) == {psutil.STATUS_STOPPED}
    ctl.unpause("rest-fixture")
    assert psutil.STATUS_STOPPED not in states(paused, psutil.STATUS_SLEEPING)
    with pytest.raises(services.Unsupported, match="--stack"):
        ctl.start("rest-fixture")  # natively a stopped service comes back by `pulumi up` on a named stack


def test_natively_a_crash_is_a_sigkill_of_the_service_process(service):
    outputs, process = service
    ctl = services.for_outputs(outputs, None)
    victim = ctl.crash("rest-fixture")
    assert process.wait(10) == -signal.SIGKILL and victim.ident == f"pid {process.pid}"
    assert not ctl.instance("rest-fixture").running
    with pytest.raises(services.ServiceControlError, match="no running process"):
        ctl.can_crash("rest-fixture")


def test_the_manifest_reads_the_fixture_build_from_a_jar_named_without_its_version(service):
    outputs, _ = service
    stack = Stack(outputs=outputs, name=None)
    (reading,) = rest_fixture_probe.version(stack, services.for_outputs(outputs, None)).values()
    assert reading.running == "1.10.1" and "iceberg-rest-adapter.jar" in reading.source
    assert "iceberg-build.properties" in reading.source


def test_the_labs_duckdb_is_a_declared_deviation():
    outputs = {"target": "docker", "clients": {"obtained_versions": {
        "duckdb": {"version": "1.4.4", "reason": "engines.duckdb_native: newest DuckDB with extensions on PyPI"},
        "iceberg-spark-runtime": {"version": "1.11.0", "reason": "from Maven Central"}}}}
    declared = declared_versions(Stack(outputs=outputs, name=None))
    assert declared["duckdb"] == ("1.4.4", "engines.duckdb_native: newest DuckDB with extensions on PyPI")
    assert declared["iceberg"][0] == "1.11.0"  # the Spark runtime is the manifest's iceberg


def test_a_probe_never_gets_an_address_only_the_labs_network_resolves():
    endpoints = {"maintenance-scheduler": {"http": {"internal": "maintenance-scheduler:8790"}},
                 "trino": {"http": {"internal": "trino:8080", "external": "localhost:8080"}}}
    lab = Stack(outputs={"target": "docker", "endpoints": endpoints})
    assert lab.endpoint("maintenance-scheduler", "http") is None and lab.endpoint("trino", "http") == "localhost:8080"
    native = Stack(outputs={"target": "native", "endpoints": {"x": {"http": {"internal": "127.0.0.1:1"}}}})
    assert native.endpoint("x", "http") == "127.0.0.1:1"  # natively every port is on loopback


def test_a_restored_catalog_file_belongs_to_its_directorys_owner(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("handing a file to another user needs root")
    directory = tmp_path / "catalog"
    directory.mkdir()
    os.chown(directory, 1000, 1000)  # the lab's fixture container runs as uid 1000 and writes its database
    backup = tmp_path / "fixture-backup.db"
    with sqlite3.connect(backup) as con:
        con.execute("CREATE TABLE t (x)")
    recovery.place_sqlite_backup(backup, directory / "fixture.db", None)
    placed = (directory / "fixture.db").stat()
    assert (placed.st_uid, placed.st_gid) == (1000, 1000)


def test_a_probe_run_clears_exactly_its_tables_locations():
    # After a purge, everything under a table's location goes (the files of commits that never landed), and
    # nothing of a sibling whose name starts the same.
    assert table_prefix("s3://warehouse/probe_1/orders") == ("warehouse", "probe_1/orders/")
    assert table_prefix("s3://warehouse/probe_1/orders/") == ("warehouse", "probe_1/orders/")
    assert table_prefix("s3://bucket/polaris/ns/t-0a1b") == ("bucket", "polaris/ns/t-0a1b/")
    assert table_prefix("s3://warehouse/") is None and table_prefix("s3://warehouse") is None  # never a bucket
    assert table_prefix("file:///tmp/warehouse/t") is None
