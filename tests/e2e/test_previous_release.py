"""A native stack deployed by the previous release (v0.3.0, from a clone of its own) is updated, then destroyed,
by this checkout, its data carried across (issue 25; issue 26's data-in-flight upgrade test builds on this).

For real: the previous release cloned and given its own venv (``make venv``), a small platform (store, catalog,
gate, exporter, schedulers, declared tables; no Trino, Flink or Kafka) deployed by it on its own backend, a
table written through its catalog; then this checkout's ``make up`` (``commands.up``) on that stack: the data
moved out of the old checkout to the state root, every resource taken over by this release's code; the table
read back; then this checkout's destroy. Needs a committed previous release (tag v0.3.0, else commit 4b7f8d0).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import psutil
import pytest

from lakehouse_platform.control import clients, commands, isolated
from lakehouse_platform.control.workspace import forget, outputs, select
from lakehouse_platform.paths import stack_state_dir
from tests.support import REPO_ROOT
from tests.support.checkouts import Checkout, deploy_previous_release, live, take_over

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]

FIRST_PORT = isolated.first_port_of("previous-release")
# The previous release writes no state_dir: the stack's default place, <state root>/<stack>, is made this
# checkout's own by the port in its name (not an isolated stack's name: it lives on the release's backend).
STACK = f"previous-release-{FIRST_PORT}"
SMALL = {"maintenance": [], "services": {name: {"enabled": False}
                                         for name in ("trino", "flink-jobmanager", "kafka", "prometheus")}}
WRITE = """
    import pyarrow as pa
    from lakehouse_platform.control import clients
    from lakehouse_platform.control.workspace import outputs
    catalog = clients.pyiceberg_catalog(outputs({stack!r}))
    catalog.create_namespace("upgrade")
    schema = pa.schema([("id", pa.int64()), ("note", pa.string())])
    table = catalog.create_table("upgrade.kept", schema=schema)
    table.append(pa.table({{"id": [1, 2, 3], "note": ["written", "by the", "previous release"]}}, schema=schema))
    print(table.metadata.table_uuid)
"""


def test_a_stack_of_the_previous_release_is_updated_then_destroyed_by_this_one(previous_release: Checkout,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    shutil.rmtree(stack_state_dir(STACK), ignore_errors=True)  # where this release puts it: empty (data is kept)
    # The previous release keeps the data where it did by default, under its checkout, even when the caller set
    # LAKEHOUSE_STATE_DIR (0.3.0 honoured it too): the move out of the old place is what this test proves.
    previous = dataclasses.replace(previous_release, env={"LAKEHOUSE_STATE_DIR": ""})
    deploy_previous_release(previous, STACK, FIRST_PORT, SMALL)
    old = previous.outputs(STACK)
    old_pids = [service["pid"] for service in old["native"]["services"].values()]
    table_uuid = previous.python(WRITE.format(stack=STACK), "write a table").strip().splitlines()[-1]
    for key, value in take_over(previous, STACK).items():
        monkeypatch.setenv(key, value)
    new_pids: list[int] = []
    try:
        seconds = commands.up(STACK, quiet=True)
        print(f"\n== {STACK}: updated by this checkout in {seconds:.0f} s")
        new = outputs(STACK)
        new_pids = [service["pid"] for service in new["native"]["services"].values()]
        assert new["native"]["state_dir"] == str(stack_state_dir(STACK)) != old["native"]["state_dir"]
        assert not Path(old["native"]["state_dir"]).exists(), "the data moved out of the old place"
        assert live(old_pids) == [] and live(new_pids) == new_pids

        table = clients.pyiceberg_catalog(new).load_table("upgrade.kept")
        assert str(table.metadata.table_uuid) == table_uuid, "the same table, not a new one"
        assert table.scan().to_arrow().num_rows == 3, "the rows written by the previous release are there"

        state = json.dumps(select(STACK).export_stack().deployment)
        for checkout in (previous.root, REPO_ROOT):
            assert str(checkout) not in state, f"{checkout} is in the stack's state after the update"
        assert set(select(STACK).preview(color="never").change_summary) == {"same"}, "a second up changes nothing"

        commands.down(STACK, quiet=True)
        assert live(new_pids) == [], "destroyed by this release: nothing of the stack runs"
        leftovers = [p.pid for p in psutil.process_iter(["cmdline"])
                     if any(new["native"]["state_dir"] in arg for arg in p.info["cmdline"] or [])]
        assert leftovers == []
    finally:
        if live(new_pids):
            commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)
        print(f"\n== previous release -> this one, {time.monotonic() - started:.0f} s in all: "
              + ", ".join(f"{k} {v:.0f} s" for k, v in previous.timings.items()))
