"""A team's repository, for real: the example team project (examples/team-project) deployed natively from the
installed wheel, then a stack deployed from a fork of this repository moved into a team's project with its data.

The way a team works, outside this checkout: the wheel built as ``make dist`` builds it, a fresh virtualenv in a
copy of the example (its dependencies from the hash lock, pip's cache; the package from its requirements pin, the
wheel alone), a Pulumi CLI of its own on PATH (this checkout's build, as an installed one), its own backend
(``<project>/.pulumi-state``) and home, and every command run in the copy through its console script and
``pulumi`` itself. Its ``dev`` stack gets the ports and state of the isolated block ``e2e`` (this test took the
place of the native end-to-end test and its block), deployed not disposable, as a stack a team relies on.

What is proven on it (what the native end-to-end test proved, on a team's project now): ``pulumi up``, a second one
changing nothing, no path of the checkout in the state, the smoke check, the policy pack from the package on a
preview, ``outputs`` hiding secrets, the safe probes through ``lakehouse verify`` (JUnit) leaving the catalog and the
store as they were, engines reading what PyIceberg wrote through a catalog restart, a dead service noticed by
refresh and restarted alone, the streaming job exactly-once through an update and a lost job manager, and
``pulumi destroy`` leaving no process. Then the fork's move (docs/use-from-your-project.md): a small stack deployed
by 0.4.0's program (``data/fork``), renamed into the team's project and backend, previews with nothing replaced,
and keeps its table's rows and its processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pytest
import yaml

from lakehouse_platform.control import clients, isolated
from lakehouse_platform.labels import PLATFORM_TYPE
from lakehouse_platform.services.trino import client as trino_client
from lakehouse_platform.version import PLATFORM_VERSION
from tests.support import REPO_ROOT
from tests.support.footprint import footprint, leftovers
from tests.support.wheel import build_wheel, copy_source, team_venv

EXAMPLE = REPO_ROOT / "examples" / "team-project"
STACK = "dev"
BLOCK = "e2e"
PULUMI_BIN = REPO_ROOT / ".tools" / "bin"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (PULUMI_BIN / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]


@dataclass
class Team:
    """A team's project directory, its virtualenv and its shell; every command runs there."""

    root: Path
    venv: Path
    env: dict[str, str]

    def run(self, *argv: str, check: bool = True, timeout: float = 1800, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), cwd=cwd or self.root, env=env or self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-4000:]}\n"
                                 f"{done.stderr[-4000:]}")
        return done

    def lakehouse(self, *args: str, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run(str(self.venv / "bin" / "lakehouse"), *args, check=check, **kwargs)

    def pulumi(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
               **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """``pulumi`` in the shell ``lakehouse env`` prepares (as a team runs it: the docs' CD does the same)."""
        return self.run("pulumi", *args, "--non-interactive", "--color", "never", check=check,
                        env=env or with_pulumi_env(self, STACK), **kwargs)

    def outputs(self, stack: str = STACK) -> dict[str, Any]:
        return json.loads(self.lakehouse("outputs", "--stack", stack, "--show-secrets").stdout)


def shell_env(team_home: Path, venv: Path) -> dict[str, str]:
    """The team's shell: its virtualenv first on PATH, a Pulumi CLI of its own, nothing of this checkout or of the
    tests' environment (their project, backend, Python path)."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "LAKEHOUSE_PROJECT", "PULUMI_BACKEND_URL", "PULUMI_HOME",
            "PULUMI_CONFIG_PASSPHRASE", "PULUMI_PYTHON_CMD", "LAKEHOUSE_PULUMI")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PATH=f"{venv / 'bin'}:{PULUMI_BIN}:{env.get('PATH', '')}", PULUMI_HOME=str(team_home / "pulumi-home"),
               PULUMI_SKIP_UPDATE_CHECK="true", LAKEHOUSE_PULUMI="installed")  # the team's own CLI, never a build
    return env


def with_pulumi_env(team: Team, stack: str) -> dict[str, str]:
    """The shell after ``eval "$(lakehouse env --stack <stack> --shell)"`` (as the docs' CD does)."""
    lines = team.lakehouse("env", "--stack", stack, "--shell").stdout.splitlines()
    env = dict(team.env)
    for line in lines:
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = subprocess.run(["bash", "-c", f"printf %s {value}"], capture_output=True, text=True,
                                  check=True).stdout
    return env


def write_stack(root: Path, stack: str, platform: dict[str, Any]) -> None:
    path = root / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text()) if path.exists() else {}
    document.setdefault("config", {})["lakehouse:platform"] = platform
    path.write_text(yaml.safe_dump(document, sort_keys=False))


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Team:
    """The example copied outside the checkout, its virtualenv made from the wheel; ``dev`` on the e2e block."""
    home = tmp_path_factory.mktemp("team")
    started = time.monotonic()
    wheel = build_wheel(copy_source(home / "source"), home / "wheels")
    root = home / "analytics-lakehouse"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".venv", ".pulumi-state", "reports", "__pycache__"))
    team_venv(root / ".venv", wheel.parent, root / "requirements.txt")
    print(f"\n== wheel {wheel.name} built and installed in a fresh virtualenv in {time.monotonic() - started:.0f} s")
    made = Team(root, root / ".venv", shell_env(home, root / ".venv"))
    dev = yaml.safe_load((root / f"Pulumi.{STACK}.yaml").read_text())["config"]["lakehouse:platform"]
    platform, ports = isolated.isolated_platform(BLOCK, platform=dev, overrides={"disposable": False})
    write_stack(root, STACK, platform)
    shutil.rmtree(platform["state_dir"], ignore_errors=True)
    print(f"== {root}: stack {STACK} on ports {ports.start}-{ports.stop - 1}, state {platform['state_dir']}")
    return made


@pytest.fixture(scope="module")
def deployed(team: Team) -> Iterator[dict[str, Any]]:
    """``pulumi up`` of the team's dev stack, as the team runs it; destroyed whatever happens."""
    env = with_pulumi_env(team, STACK)  # (`lakehouse env` makes the project's backend and its stacks)
    team.pulumi("stack", "select", "--create", STACK, env=env)
    try:
        started = time.monotonic()
        team.pulumi("up", "--yes", "--stack", STACK, env=env)
        print(f"\n== pulumi up of the team's stack {STACK}: {time.monotonic() - started:.0f} s")
        yield team.outputs()
    finally:
        team.pulumi("destroy", "--yes", "--stack", STACK, env=env, check=False)


def test_the_wheel_installs_one_package_and_its_command_says_the_version(team):
    assert team.lakehouse("--version").stdout.strip() == f"lakehouse {PLATFORM_VERSION}"
    where = team.run(str(team.venv / "bin" / "python"), "-c", "import lakehouse_platform; print(lakehouse_platform.__file__)")
    assert where.stdout.strip().startswith(str(team.venv)), "the package is the wheel's, not the checkout's"
    helps = team.lakehouse("--help").stdout
    assert "verify" in helps and "policy-pack" in helps and "review" in helps


def test_the_review_reads_the_teams_own_stack_file(team):
    review = json.loads(team.lakehouse("review", "--stack", STACK, "--format", "json").stdout)
    assert [t["table"] for t in review["tables"]] == ["web.page_views", "web.sessions"]
    web = next(row for row in review["grants"] if row["namespace"] == "web")
    assert "analyst" in web["read"] and "analyst" not in web["write"] and "ingest" in web["write"]


def test_no_path_of_the_checkout_is_in_the_stacks_state(team, deployed):
    """Data, logs, the Python the platform's processes run, its code, the providers' code: none in the checkout. (The
    team's Pulumi CLI is this checkout's build, so the engine's source positions name its launcher: the CLI's.)"""
    state = team.pulumi("stack", "export", "--stack", STACK).stdout.replace(str(PULUMI_BIN), "<the team's pulumi>")
    print(f"\n== {STACK}: {len(state)} bytes of state, {state.count(str(REPO_ROOT))} occurrences of {REPO_ROOT}, "
          f"{state.count(str(team.venv))} of the team's virtualenv")
    assert state.count(str(REPO_ROOT)) == 0
    assert deployed["platform"] == "analytics" and deployed["target"] == "native"


def test_a_second_up_changes_nothing_and_the_policy_pack_passes_a_preview(team, deployed):
    env = with_pulumi_env(team, STACK)
    team.pulumi("preview", "--expect-no-changes", "--stack", STACK, env=env)
    pack = team.lakehouse("policy-pack").stdout.strip()
    assert pack.startswith(str(team.venv)), "the pack is the installed package's"
    done = team.pulumi("preview", "--stack", STACK, "--policy-pack", pack, env=env)
    assert "lakehouse-contracts" in done.stdout and "error" not in done.stdout.lower().split("resources:")[-1]


def test_the_smoke_check_passes_and_outputs_hide_secrets_unless_asked(team, deployed):
    team.lakehouse("smoke", "--stack", STACK)
    hidden = json.loads(team.lakehouse("outputs", "--stack", STACK).stdout)
    assert hidden["credentials"] == "[secret]" and isinstance(deployed["credentials"], dict)
    assert hidden["endpoints"] == deployed["endpoints"]
    assert deployed["credentials"]["s3_secret_key"] not in json.dumps(hidden)


def test_the_safe_probes_alone_run_on_the_teams_stack_and_leave_nothing_behind(team, deployed, tmp_path):
    """``lakehouse verify`` as a team's CD runs it on a stack it cannot afford to disturb: the disruptive probes skip
    saying why, the safe ones pass, and the catalog and the store are as they were, but for the commits of the
    platform's own streaming writers (the Flink job, the CDC sink), which go on meanwhile."""
    assert deployed["disposable"] is False and deployed["stack"] == STACK
    before = footprint(deployed)
    report = tmp_path / "probes.xml"
    started = time.monotonic()
    done = team.lakehouse("verify", "--stack", STACK, "--junit", str(report), check=False, timeout=3600)
    took = time.monotonic() - started
    after = footprint(team.outputs())
    print(done.stdout[-6000:])
    cases = list(ET.parse(report).iter("testcase"))  # noqa: S314 - our own pytest's JUnit file
    ran = [c for c in cases if c.find("skipped") is None]
    skipped = {f"{c.get('classname')}.{c.get('name')}": c.find("skipped").get("message", "")  # type: ignore[union-attr]
               for c in cases if c.find("skipped") is not None}
    disruptive = {name: why for name, why in skipped.items() if why.startswith("disruptive: ")}
    print(f"\n== safe set on the team's stack {STACK}: {len(ran)} ran, {len(disruptive)} disruptive skipped, "
          f"{len(skipped) - len(disruptive)} skipped otherwise, {took:.0f} s")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "test_faults.test_kill_9_of_the_catalog_mid_commit_loses_no_acknowledged_commit" in disruptive
    assert all(f"stack {STACK} is not marked disposable" in why for why in disruptive.values())
    assert len(ran) >= 10 and not any(c.get("classname", "").endswith(("test_faults", "test_restart")) for c in ran)
    assert leftovers(before, after) == []


def test_engines_read_what_pyiceberg_wrote_and_it_survives_a_catalog_restart(team, deployed):
    namespace = f"e2e_{uuid.uuid4().hex[:8]}"
    table_name = f"{namespace}.orders"
    catalog = clients.pyiceberg_catalog(deployed, name="e2e")  # the host profiles' identity (the writer)
    catalog.create_namespace(namespace)
    schema = pa.schema([("order_id", pa.int64()), ("amount", pa.float64())])
    table = catalog.create_table(table_name, schema=schema)
    table.append(pa.table({"order_id": list(range(100)), "amount": [float(i) for i in range(100)]}, schema=schema))
    table.append(pa.table({"order_id": [100, 101], "amount": [1.5, 2.5]}, schema=schema))

    def counts(outputs: dict[str, Any]) -> tuple[int, int, int]:
        cur = trino_client.connection(outputs, catalog="fixture").cursor()
        cur.execute(f"SELECT count(*) FROM fixture.{table_name}")
        duck = clients.duckdb_connection(outputs).execute(f"SELECT count(*) FROM lab.{table_name}").fetchone()
        return (clients.pyiceberg_catalog(outputs, name="e2e").load_table(table_name).scan().to_arrow().num_rows,
                cur.fetchone()[0], duck[0])

    assert counts(deployed) == (102, 102, 102)
    snapshot = catalog.load_table(table_name).current_snapshot().snapshot_id
    old_pid = deployed["native"]["services"]["rest-fixture"]["pid"]
    team.lakehouse("restart", "rest-fixture", "--stack", STACK)
    new_pid = team.outputs()["native"]["services"]["rest-fixture"]["pid"]
    print(f"\n== rest-fixture restarted by `lakehouse restart` (pid {old_pid} -> {new_pid})")
    assert new_pid != old_pid and not psutil.pid_exists(old_pid)
    assert clients.pyiceberg_catalog(deployed, name="e2e").load_table(table_name).current_snapshot().snapshot_id \
        == snapshot
    assert counts(deployed) == (102, 102, 102)


def local_services(team: Team) -> dict[str, dict[str, Any]]:
    """Each LocalService's recorded outputs in the stack's state, by service."""
    state = json.loads(team.pulumi("stack", "export", "--stack", STACK).stdout)
    return {r["outputs"]["service"]: r["outputs"] for r in state["deployment"]["resources"]
            if r["type"].endswith("native:LocalService")}


def test_refresh_notices_a_dead_service_and_up_restarts_only_it(team, deployed):
    env = with_pulumi_env(team, STACK)
    before = {name: state["pid"] for name, state in local_services(team).items()}
    victim = psutil.Process(before["postgres"])
    victim.kill()  # by its recorded pid: the service dies behind Pulumi's back
    victim.wait(timeout=10)
    team.pulumi("refresh", "--yes", "--stack", STACK, env=env)
    dead = local_services(team)["postgres"]
    assert dead["alive"] is False and dead["pid"] == 0
    team.pulumi("up", "--yes", "--stack", STACK, env=env)
    after = {name: state["pid"] for name, state in local_services(team).items()}
    assert after["postgres"] not in (0, before["postgres"]) and psutil.pid_exists(after["postgres"])
    assert {k: v for k, v in after.items() if k != "postgres"} == {k: v for k, v in before.items() if k != "postgres"}


def _wait_for_a_checkpoint(outputs: dict[str, Any], job_id: str, timeout_s: float = 90.0) -> int:
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


def test_streaming_job_resumes_exactly_once_after_an_update_and_a_lost_job_manager(team, deployed):
    """An update is stop-with-savepoint + resubmit from it; a job manager restart (no HA: the job is lost) is
    a resubmit from the newest retained checkpoint. The generator's order ids stay unique through both."""
    first = team.outputs()["jobs"]["flink-orders-job"]
    assert first["state"] == "RUNNING" and first["restored_from"] == ""
    _wait_for_a_checkpoint(deployed, first["job_id"])
    path = team.root / f"Pulumi.{STACK}.yaml"
    document = yaml.safe_load(path.read_text())
    # A tuning change (same lineage: job name, table and source kept), so the job resumes from its savepoint.
    document["config"]["lakehouse:platform"].setdefault("flink", {}).setdefault("job", {})["rows_per_second"] = 40
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    team.pulumi("up", "--yes", "--stack", STACK, env=with_pulumi_env(team, STACK))
    updated = team.outputs()["jobs"]["flink-orders-job"]
    assert updated["job_id"] != first["job_id"] and "/savepoints/" in updated["restored_from"]
    _wait_for_a_checkpoint(deployed, updated["job_id"])
    team.lakehouse("restart", "flink-jobmanager", "--stack", STACK)
    restored = team.outputs()["jobs"]["flink-orders-job"]
    assert restored["job_id"] != updated["job_id"] and "/checkpoints/" in restored["restored_from"]
    assert updated["job_id"] in restored["restored_from"]  # the lost job's own retained checkpoint
    _wait_for_a_checkpoint(deployed, restored["job_id"])
    job = deployed["profiles"]["host"]["flink"]["job"]
    ids = clients.pyiceberg_catalog(deployed, name="e2e-flink").load_table(job["table"]).scan(
        selected_fields=("order_id",)).to_arrow().column("order_id").to_pylist()
    print(f"\n== streaming table: {len(ids)} rows, {len(set(ids))} distinct order ids after an update and a JM restart")
    assert len(ids) == len(set(ids)) > 0


def platform_processes(state_dir: str) -> list[psutil.Process]:
    """Processes whose command line points into a stack's state directory."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(state_dir in arg for arg in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_destroy_leaves_no_platform_process(team, deployed):
    """Last test of the team's stack (file order): destroy it, then nothing of it may be running."""
    now = team.outputs()
    state_dir = now["native"]["state_dir"]
    assert state_dir == str(isolated.isolated_state_dir(BLOCK)), "the stack's state is its own, by its ports"
    pids = [info["pid"] for info in now["native"]["services"].values()]
    assert pids and all(psutil.pid_exists(pid) for pid in pids)
    procs = [p for pid in pids for p in (psutil.Process(pid), *psutil.Process(pid).children(recursive=True))]
    team.pulumi("destroy", "--yes", "--stack", STACK, env=with_pulumi_env(team, STACK))
    assert platform_processes(state_dir) == []
    # is_running() compares the start time too, so a reused pid does not count as ours.
    assert [p.pid for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []


# -- a fork's stack moved into a team's project --------------------------------------------------------------------

#: The fork's platform: the storage and the catalog (what the move must keep: a table and its rows), on the same
#: block of ports once the team's stack is gone.
FORK_SERVICES_OFF = ("trino", "prometheus", "lakehouse-exporter", "maintenance-scheduler", "catalog-backup",
                     "flink-jobmanager", "kafka", "polaris", "lakekeeper")


def test_a_stack_deployed_from_a_fork_moves_into_the_teams_project_with_its_data(team, tmp_path):
    """docs/use-from-your-project.md, "From a fork": the fork's stack renamed into the team's project, its backend
    and its stack file taken along, the program the package's component with bare names; the preview replaces
    nothing and the stack keeps its table's rows and its running processes."""
    fork = tmp_path / "fork"
    fork.mkdir()
    (fork / "Pulumi.yaml").write_text(yaml.safe_dump({"name": "lakehouse-platform", "runtime": {
        "name": "python", "options": {"toolchain": "pip", "virtualenv": str(team.venv)}}}))
    shutil.copy(REPO_ROOT / "tests" / "e2e" / "data" / "fork" / "__main__.py", fork / "__main__.py")
    services = {name: {"enabled": False} for name in FORK_SERVICES_OFF}
    platform, _ = isolated.isolated_platform(BLOCK, platform={"target": "native", "name": "lakehouse",
                                                              "services": services})
    platform["state_dir"] = str(isolated.state_root() / f"fork-{isolated.first_port_of(BLOCK)}")
    shutil.rmtree(platform["state_dir"], ignore_errors=True)
    write_stack(fork, STACK, platform)
    forked = Team(fork, team.venv, {**team.env, "PULUMI_BACKEND_URL": f"file://{fork / '.pulumi-state'}"})
    (fork / ".pulumi-state").mkdir()
    env = with_pulumi_env(forked, STACK)
    forked.pulumi("stack", "init", STACK, env=env)
    moved: Team | None = None
    try:
        forked.pulumi("up", "--yes", "--stack", STACK, env=env)
        before = forked.outputs()
        catalog = clients.pyiceberg_catalog(before, name="fork")
        catalog.create_namespace("kept")
        schema = pa.schema([("id", pa.int64())])
        catalog.create_table("kept.rows", schema=schema).append(pa.table({"id": list(range(42))}, schema=schema))

        # The move: the stack renamed into the team's project, the backend and the stack file taken along.
        forked.pulumi("stack", "rename", f"organization/analytics-lakehouse/{STACK}", "--stack", STACK, env=env)
        moved = Team(tmp_path / "moved", team.venv, team.env)
        shutil.copytree(EXAMPLE, moved.root, ignore=shutil.ignore_patterns(".venv", "Pulumi.*.yaml", "__pycache__"))
        (moved.root / "Pulumi.yaml").write_text((team.root / "Pulumi.yaml").read_text().replace(
            "virtualenv: .venv", f"virtualenv: {team.venv}"))
        shutil.copy(REPO_ROOT / "__main__.py", moved.root / "__main__.py")  # one platform, bare names
        shutil.copy(fork / f"Pulumi.{STACK}.yaml", moved.root / f"Pulumi.{STACK}.yaml")
        shutil.move(fork / ".pulumi-state", moved.root / ".pulumi-state")
        # The state directory records the stack that owns it (project, stack, backend): the moved stack claims it,
        # and takes over what an earlier release's providers recorded (nothing here: the fork ran this release's).
        moved.lakehouse("claim", "--stack", STACK)
        moved.lakehouse("adopt", "--stack", STACK)
        env = with_pulumi_env(moved, STACK)
        preview = json.loads(moved.pulumi("preview", "--stack", STACK, "--json", env=env).stdout)
        ops: dict[str, list[str]] = {}
        for step in preview.get("steps", []):
            ops.setdefault(step["op"], []).append(step["urn"])
        print(f"\n== the team project's preview of the fork's stack: "
              f"{ {op: len(urns) for op, urns in ops.items()} }; changed: "
              f"{ {op: urns for op, urns in ops.items() if op != 'same'} }")
        assert set(ops) <= {"same", "create", "update"}, ops  # no replace, no delete
        assert [urn.split("::")[2] for urn in ops.get("create", [])] == [PLATFORM_TYPE]  # the component, alone
        # The state directory's owner record: the move (and the claim) changed the project it names.
        assert all(urn.endswith(":StateOwner::lakehouse-state-owner") for urn in ops.get("update", [])), ops
        moved.pulumi("up", "--yes", "--stack", STACK, env=env)
        after = moved.outputs()
        assert {n: s["pid"] for n, s in after["native"]["services"].items()} == \
            {n: s["pid"] for n, s in before["native"]["services"].items()}, "no process restarted"
        rows = clients.pyiceberg_catalog(after, name="moved").load_table("kept.rows").scan().to_arrow().num_rows
        assert rows == 42
        moved.lakehouse("smoke", "--stack", STACK)
    finally:
        if moved is not None and (moved.root / ".pulumi-state").exists():
            moved.pulumi("destroy", "--yes", "--stack", STACK, env=with_pulumi_env(moved, STACK), check=False)
        else:
            forked.pulumi("destroy", "--yes", "--stack", STACK, env=with_pulumi_env(forked, STACK), check=False)
