"""End to end, for real: `pulumi up` of a native stack, the safe probes against it, engines through it, restart,
destroy.

The stack is an isolated copy of the native stack (``e2e``: its own block of ports and its own
state, lakehouse_platform.control.isolated), so the test never collides with a user's own ``make up`` platform.
It is deployed as a stack a team relies on is: not disposable, so the probe suite runs only its safe set on it,
and the catalog and the store are compared before and after that run (issue 24, item 3).
Needs a Pulumi CLI (yours, or the project's build: ``make pulumi``) and the native artifacts in the cache:
``make test`` installs both first. A failed first ``pulumi up`` fails the test: it is never retried behind the
reader's back.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass

import psutil
import pyarrow as pa
import pytest
import yaml

from lakehouse_platform.control import clients, commands, isolated
from lakehouse_platform.control.workspace import forget, outputs, refresh, select
from lakehouse_platform.services.trino import client as trino_client
from tests.support import REPO_ROOT

STACK = "e2e"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
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
    # A clean platform (its state directory starts empty), deployed as a stack someone relies on: not disposable.
    isolated.isolated_stack(STACK, overrides={"disposable": False})
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
    print(f"\n== {STACK}: {len(state)} bytes of state, {state.count(str(REPO_ROOT))} occurrences of {REPO_ROOT}")
    assert state.count(str(REPO_ROOT)) == 0


def test_second_up_changes_nothing(deployed):
    preview = select(STACK).preview(expect_no_changes=True, diff=True, color="never")
    assert preview.change_summary.get("same", 0) > 0
    assert set(preview.change_summary) == {"same"}, preview.change_summary


@dataclass
class Footprint:
    """What the safe probes must leave as they found it: the catalog's namespaces and tables (each table's snapshots
    with their summaries), and every object under the warehouse."""

    namespaces: set[str]
    snapshots: dict[str, dict[int, dict[str, str]]]  # table -> snapshot id -> summary
    locations: dict[str, str]  # table -> its location
    objects: set[str]  # s3://bucket/key


def footprint(outputs) -> Footprint:
    from lakehouse_platform.probes.support.stack import Stack

    stack = Stack(outputs=outputs)
    catalog = stack.catalog(identity=stack.platform_identity)  # the platform's identity sees every namespace
    namespaces = {".".join(ns) for ns in catalog.list_namespaces()}
    snapshots, locations = {}, {}
    for namespace in namespaces:
        for ident in catalog.list_tables(namespace):
            table = catalog.load_table(ident)
            name = ".".join(ident)
            snapshots[name] = {s.snapshot_id: dict(s.summary.additional_properties if s.summary else {})
                               for s in table.snapshots()}
            locations[name] = table.location().rstrip("/") + "/"
    s3, objects = stack.s3(identity=stack.platform_identity), set()
    for prefix in stack.warehouse_prefixes:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=stack.bucket, Prefix=prefix):
            objects |= {f"s3://{stack.bucket}/{o['Key']}" for o in page.get("Contents", [])}
    return Footprint(namespaces, snapshots, locations, objects)


#: What the platform's own streaming writers put in a snapshot summary: they keep committing while probes run.
STREAMING_COMMIT_KEYS = ("flink.job-id", "kafka.connect.commit-id")


def leftovers(before: Footprint, after: Footprint) -> list[str]:
    """What changed between the two footprints that the platform's own streaming writers did not do."""
    found = []
    if after.namespaces != before.namespaces:
        found.append(f"namespaces: added {sorted(after.namespaces - before.namespaces)}, "
                     f"removed {sorted(before.namespaces - after.namespaces)}")
    if set(after.snapshots) != set(before.snapshots):
        found.append(f"tables: added {sorted(set(after.snapshots) - set(before.snapshots))}, "
                     f"removed {sorted(set(before.snapshots) - set(after.snapshots))}")
    streamed = set()  # tables a streaming writer committed to during the run: the files under them are its own
    for table, known in before.snapshots.items():
        added = {sid: summary for sid, summary in after.snapshots.get(table, {}).items() if sid not in known}
        foreign = {sid: summary for sid, summary in added.items()
                   if not any(key in summary for key in STREAMING_COMMIT_KEYS)}
        if foreign:
            found.append(f"{table}: snapshots by something else than the platform's streaming writers: {foreign}")
        if added:
            streamed.add(before.locations[table])
        if set(known) - set(after.snapshots.get(table, {})):
            found.append(f"{table}: snapshots gone: {sorted(set(known) - set(after.snapshots.get(table, {})))}")
    def written_by_streams(key: str) -> bool:
        return any(key.startswith(location) for location in streamed)

    # A streaming writer also deletes files of its own (Flink's committer its checkpoint manifests once committed).
    added_objects = sorted(k for k in after.objects - before.objects if not written_by_streams(k))
    removed_objects = sorted(k for k in before.objects - after.objects if not written_by_streams(k))
    if added_objects:
        found.append(f"{len(added_objects)} objects left under the warehouse: {added_objects[:10]}")
    if removed_objects:
        found.append(f"{len(removed_objects)} objects gone from the warehouse: {removed_objects[:10]}")
    return found


def test_the_safe_probes_alone_run_on_a_stack_not_marked_disposable_and_leave_nothing_behind(deployed, tmp_path):
    """``pytest lakehouse_platform/probes --stack e2e`` as a CD pipeline runs it against a stack it cannot afford to disturb: the
    disruptive probes skip saying why, the safe ones pass, and the catalog and the store are as they were, but for
    the commits of the platform's own streaming writers (the Flink job, the CDC sink), which go on meanwhile."""
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    from lakehouse_platform.control.workspace import pulumi_env

    assert deployed["disposable"] is False and deployed["stack"] == STACK
    before = footprint(deployed)
    report = tmp_path / "probes.xml"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "lakehouse_platform/probes", "--stack", STACK, "-p", "no:cacheprovider",
                           f"--junitxml={report}"], cwd=REPO_ROOT, env={**os.environ, **pulumi_env(STACK)},
                          capture_output=True, text=True, timeout=3600, check=False)
    took = time.monotonic() - started
    after = footprint(outputs(STACK))
    print(done.stdout[-6000:])
    cases = list(ET.parse(report).iter("testcase"))  # noqa: S314 - our own pytest's JUnit file
    ran = [c for c in cases if c.find("skipped") is None]
    skipped = {f"{c.get('classname')}.{c.get('name')}": c.find("skipped").get("message", "")  # type: ignore[union-attr]
               for c in cases if c.find("skipped") is not None}
    disruptive = {name: why for name, why in skipped.items() if why.startswith("disruptive: ")}
    print(f"\n== safe set on stack {STACK}: {len(ran)} ran, {len(disruptive)} disruptive skipped, "
          f"{len(skipped) - len(disruptive)} skipped otherwise, {took:.0f} s; "
          f"{len(after.objects - before.objects)} objects added by the streaming writers")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "test_faults.test_kill_9_of_the_catalog_mid_commit_loses_no_acknowledged_commit" in disruptive
    assert all(f"stack {STACK} is not marked disposable" in why for why in disruptive.values())
    assert len(ran) >= 10 and not any(c.get("classname", "").endswith(("test_faults", "test_restart")) for c in ran)
    assert leftovers(before, after) == []


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
    from lakehouse_platform.services.flink.rest import FlinkRest

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

    path = REPO_ROOT / f"Pulumi.{STACK}.yaml"
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
        preview = select(name).preview(policy_packs=[str(REPO_ROOT / "lakehouse_platform" / "policies")], color="never")
        assert "error" not in preview.stdout.lower().split("resources:")[-1], preview.stdout[-3000:]
    finally:
        forget(name)
        isolated.remove_stack_file(name)
