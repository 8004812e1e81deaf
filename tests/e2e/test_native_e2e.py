"""End to end, for real: `pulumi up` of a native stack, engines through it, restart, destroy.

The stack is an isolated copy of the native stack (``e2e``: its own block of ports and its own
state, infra.control.isolated), so the test never collides with a user's own ``make up`` platform.
Needs a Pulumi CLI (yours, or the project's build: ``make pulumi``) and the native artifacts in the cache:
``make test`` installs both first. A failed first ``pulumi up`` fails the test: it is never retried behind the
reader's back.
"""

from __future__ import annotations

import time
import uuid

import psutil
import pyarrow as pa
import pytest
import yaml

from infra.control import clients, commands, isolated
from infra.control.workspace import forget, outputs, refresh, select
from infra.paths import PROJECT_ROOT
from infra.services.trino import client as trino_client

STACK = "e2e"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (PROJECT_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]


def _platform_processes(state_dir: str) -> list[psutil.Process]:
    """Processes whose command line points into this stack's state directory."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(state_dir in arg for arg in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def deployed():
    """The e2e stack, up; destroyed (and forgotten) afterwards whatever happens."""
    isolated.isolated_stack(STACK)  # a clean platform: its state directory starts empty
    try:
        seconds = commands.up(STACK, quiet=True)
        print(f"\n== native stack {STACK} up in {seconds:.1f} s")
        yield outputs(STACK)
    finally:
        commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)


def _catalog(outputs):
    return clients.pyiceberg_catalog(outputs, name="e2e")  # the host profiles' identity (the writer)


def _trino_count(outputs, table: str) -> int:
    cur = trino_client.connection(outputs, catalog="fixture").cursor()
    cur.execute(f"SELECT count(*) FROM fixture.{table}")
    return cur.fetchone()[0]


def _duckdb_count(outputs, table: str) -> int:
    con = clients.duckdb_connection(outputs)
    return con.execute(f"SELECT count(*) FROM lab.{table}").fetchone()[0]


def test_no_path_of_the_checkout_is_in_the_stacks_state(deployed):
    """Data, logs, the Python the platform's processes run, its code, the providers' code: none in the checkout."""
    import json

    state = json.dumps(select(STACK).export_stack().deployment)
    print(f"\n== {STACK}: {len(state)} bytes of state, {state.count(str(PROJECT_ROOT))} occurrences of {PROJECT_ROOT}")
    assert state.count(str(PROJECT_ROOT)) == 0


def test_second_up_changes_nothing(deployed):
    preview = select(STACK).preview(expect_no_changes=True, diff=True, color="never")
    assert preview.change_summary.get("same", 0) > 0
    assert set(preview.change_summary) == {"same"}, preview.change_summary


def test_engines_read_what_pyiceberg_wrote_and_it_survives_a_catalog_restart(deployed):
    namespace = f"e2e_{uuid.uuid4().hex[:8]}"
    table_name = f"{namespace}.orders"
    catalog = _catalog(deployed)
    catalog.create_namespace(namespace)
    schema = pa.schema([("order_id", pa.int64()), ("amount", pa.float64())])
    table = catalog.create_table(table_name, schema=schema)
    table.append(pa.table({"order_id": list(range(100)), "amount": [float(i) for i in range(100)]}, schema=schema))
    table.append(pa.table({"order_id": [100, 101], "amount": [1.5, 2.5]}, schema=schema))

    assert catalog.load_table(table_name).scan().to_arrow().num_rows == 102
    assert _trino_count(deployed, table_name) == 102
    assert _duckdb_count(deployed, table_name) == 102
    snapshot = catalog.load_table(table_name).current_snapshot().snapshot_id

    old_pid = deployed["native"]["services"]["rest-fixture"]["pid"]
    seconds = commands.restart("rest-fixture", STACK)
    new_pid = outputs(STACK)["native"]["services"]["rest-fixture"]["pid"]
    print(f"\n== rest-fixture restarted in {seconds:.1f} s (pid {old_pid} -> {new_pid})")
    assert new_pid != old_pid and not psutil.pid_exists(old_pid)

    again = _catalog(deployed).load_table(table_name)
    assert again.current_snapshot().snapshot_id == snapshot
    assert again.scan().to_arrow().num_rows == 102
    assert _trino_count(deployed, table_name) == 102
    assert _duckdb_count(deployed, table_name) == 102


def _resource_state(service: str) -> dict:
    exported = select(STACK).export_stack()
    for resource in exported.deployment["resources"]:
        if resource["type"].endswith("native:LocalService") and resource["urn"].endswith(f"::{service}"):
            return resource["outputs"]
    raise AssertionError(f"no LocalService {service} in the stack's state")


def test_refresh_notices_a_dead_service_and_up_restarts_only_it(deployed):
    before = {name: _resource_state(name)["pid"] for name in deployed["native"]["services"]}
    victim = psutil.Process(before["postgres"])
    victim.kill()  # by its recorded pid: the service dies behind Pulumi's back
    victim.wait(timeout=10)

    refresh(STACK)
    dead = _resource_state("postgres")
    assert dead["alive"] is False and dead["pid"] == 0

    commands.up(STACK, quiet=True)
    after = {name: _resource_state(name)["pid"] for name in deployed["native"]["services"]}
    assert after["postgres"] not in (0, before["postgres"]) and psutil.pid_exists(after["postgres"])
    assert {k: v for k, v in after.items() if k != "postgres"} == {k: v for k, v in before.items() if k != "postgres"}


def _generator_ids(outputs) -> tuple[int, int]:
    """(rows, distinct order ids) of the streaming job's table."""
    table = _catalog(outputs).load_table(outputs["profiles"]["host"]["flink"]["job"]["table"])
    ids = table.scan(selected_fields=("order_id",)).to_arrow().column("order_id").to_pylist()
    return len(ids), len(set(ids))


def _wait_for_a_checkpoint(outputs, job_id: str, timeout_s: float = 90.0) -> int:
    from infra.services.flink.rest import FlinkRest

    rest = FlinkRest(outputs["profiles"]["host"]["flink"]["rest"])
    first = rest.checkpoints(job_id)["counts"]["completed"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        latest = rest.checkpoints(job_id)["counts"]["completed"]
        if latest > first:
            return latest
        time.sleep(1)
    raise AssertionError(f"job {job_id} completed no checkpoint in {timeout_s:g}s")


def test_streaming_job_resumes_exactly_once_after_an_update_and_a_lost_job_manager(deployed):
    """An update is stop-with-savepoint + resubmit from it; a job manager restart (no HA: the job is lost) is
    a resubmit from the newest retained checkpoint. The generator's order ids stay unique through both."""
    first = outputs(STACK)["jobs"]["flink-orders-job"]
    assert first["state"] == "RUNNING" and first["restored_from"] == ""
    _wait_for_a_checkpoint(deployed, first["job_id"])

    path = PROJECT_ROOT / f"Pulumi.{STACK}.yaml"
    document = yaml.safe_load(path.read_text())
    # A tuning change (same lineage: job name, table and source kept), so the job resumes from its savepoint.
    document["config"]["lakehouse:platform"].setdefault("flink", {}).setdefault("job", {})["rows_per_second"] = 40
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    commands.up(STACK, quiet=True)
    updated = outputs(STACK)["jobs"]["flink-orders-job"]
    assert updated["job_id"] != first["job_id"] and "/savepoints/" in updated["restored_from"]
    _wait_for_a_checkpoint(deployed, updated["job_id"])

    commands.restart("flink-jobmanager", STACK)
    restored = outputs(STACK)["jobs"]["flink-orders-job"]
    assert restored["job_id"] != updated["job_id"] and "/checkpoints/" in restored["restored_from"]
    assert updated["job_id"] in restored["restored_from"]  # the lost job's own retained checkpoint
    _wait_for_a_checkpoint(deployed, restored["job_id"])
    rows, distinct = _generator_ids(deployed)
    print(f"\n== streaming table: {rows} rows, {distinct} distinct order ids after an update and a JM restart")
    assert rows == distinct > 0


def test_destroy_leaves_no_platform_process(deployed):
    """Last test of the stack (file order): destroy it, then nothing of it may be running."""
    deployed_now = outputs(STACK)
    state_dir = deployed_now["native"]["state_dir"]
    assert state_dir == str(isolated.isolated_state_dir(STACK)), "an isolated stack's state is its own, by its ports"
    pids = [info["pid"] for info in deployed_now["native"]["services"].values()]
    assert pids and all(psutil.pid_exists(pid) for pid in pids)
    procs = [p for pid in pids for p in (psutil.Process(pid), *psutil.Process(pid).children(recursive=True))]
    commands.down(STACK, quiet=True)
    assert _platform_processes(state_dir) == []
    # is_running() compares the start time too, so a reused pid does not count as ours.
    assert [p.pid for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []


def test_preview_of_an_isolated_native_stack_with_the_policy_pack_runs_clean():
    """The policy pack on a real preview, on the isolated `preview` block (a running `make up` does not matter)."""
    name = "preview"
    isolated.isolated_stack(name)
    try:
        preview = select(name).preview(policy_packs=[str(PROJECT_ROOT / "policies")], color="never")
        assert "error" not in preview.stdout.lower().split("resources:")[-1], preview.stdout[-3000:]
    finally:
        forget(name)
        isolated.remove_stack_file(name)
