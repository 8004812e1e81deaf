"""A destroy completes when a service it deletes through is already down (issue 25): Kafka killed by its pid,
then ``make down``. Connect answers but cannot act without Kafka; the connectors (and the CDC source's offsets)
are dropped from the state with a warning instead of waited for, and nothing of the stack is left running.

For real, on a small platform: the store, the catalog and its gate, PostgreSQL (the bookshop's CDC source),
Kafka, Connect with its connectors; no Trino, Flink or operations services.
"""

from __future__ import annotations

import signal
import time

import psutil
import pytest

from lakehouse_platform.control import commands, isolated
from lakehouse_platform.control.workspace import forget, outputs, select
from lakehouse_platform.runtime import watchdog
from tests.support import REPO_ROOT
from tests.support.checkouts import live

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]

FIRST_PORT = isolated.first_port_of("service-down")
STACK = "down"  # its state: <state root>/down-<first port> (isolated_stack)
STREAMS_ONLY = {"maintenance": [], "services": {name: {"enabled": False} for name in (
    "trino", "flink-jobmanager", "prometheus", "lakehouse-exporter", "maintenance-scheduler", "catalog-backup")}}


def _kill(record: dict) -> None:
    """SIGKILL the service and its watchdog, by their recorded pids: a crash nothing restarts."""
    status = watchdog.read_status(record["data_dir"])
    for pid in (int(status.get("pid") or 0), int(record["pid"])):
        if pid:
            try:
                psutil.Process(pid).send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                continue


def test_destroy_completes_and_warns_when_kafka_is_already_down() -> None:
    started = time.monotonic()
    isolated.isolated_stack(STACK, first_port=FIRST_PORT, overrides=STREAMS_ONLY)
    pids: list[int] = []
    try:
        up_s = commands.up(STACK, quiet=True)
        deployed = outputs(STACK)
        services = deployed["native"]["services"]
        assert {"kafka", "kafka-connect"} <= set(services) and deployed["streams"]["connectors"]
        pids = [record["pid"] for record in services.values()]
        _kill(services["kafka"])
        time.sleep(2)
        assert not live([services["kafka"]["pid"]])

        seen: list[str] = []
        began = time.monotonic()
        select(STACK).destroy(on_output=seen.append, color="never")
        down_s = time.monotonic() - began
        said = "\n".join(seen)
        for connector in deployed["streams"]["connectors"]:
            assert f"connector {connector['name']}: Kafka Connect at " in said, said[-3000:]
        assert "dropped from the state without undoing it" in said
        assert live(pids) == [], "nothing of the stack runs after the destroy"
        leftovers = [p.pid for p in psutil.process_iter(["cmdline"])
                     if any(deployed["native"]["state_dir"] in arg for arg in p.info["cmdline"] or [])]
        assert leftovers == []
        print(f"\n== {STACK}: up {up_s:.0f} s; Kafka killed; destroy {down_s:.0f} s "
              f"({len(deployed['streams']['connectors'])} connectors dropped with a warning)")
    finally:
        if live(pids):
            commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)
        print(f"== service-down destroy test: {time.monotonic() - started:.0f} s in all")
