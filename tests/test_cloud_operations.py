"""The operating layers on aws: the maintenance task's own command run here (the Python maintenance, its
config written and read back), the tables script against a stand-in Trino CLI,
the declared-tables task as a deployment step (EcsTaskRun) under mocks and against a stand-in ECS API."""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.operations import tables
from infra.services.maintenance_scheduler import aws as maintenance_aws
from infra.targets.aws import run_task as rt
from infra.targets.aws import tables as aws_tables
from tests.support.harness import ProgramRun, cached_run
from tests.support.stacks import stack_platform

FAKE_TRINO = """#!/bin/sh
# Records its arguments, one call per line; answers the table listing like `trino --output-format TSV`.
printf '%s\\n' "$*" >> "$TRINO_CALLS"
case "$*" in
  *information_schema.tables*) printf 'shop\\torders\\nshop\\tcustomers\\nprobe\\tscratch\\n' ;;
  *FAIL_HERE*) echo "Query failed: TABLE_NOT_FOUND" >&2; exit 1 ;;
esac
"""


def _fake_trino(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    tool = bindir / "trino"
    tool.write_text(FAKE_TRINO)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bindir}:{os.environ['PATH']}", "TRINO_CALLS": str(tmp_path / "calls")}


def _run(script: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", "\n".join(script)], env=env, capture_output=True, text=True, timeout=30,
                          check=False)


def _task_container(run: ProgramRun, family: str) -> dict[str, Any]:
    import json

    task = next(t for t in run.of_type("aws:ecs/taskDefinition:TaskDefinition") if t.name == family)
    (container,) = json.loads(task.inputs["containerDefinitions"])
    return container


def _run_task_script(container: dict[str, Any], tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The task's own entry point and command, run here with the project's interpreter as the image's python;
    the task's state directory (in the command, and in the config it carries base64-encoded) moved under
    ``tmp_path``: the image's /tmp is the task's own."""
    here = str(tmp_path / "task")

    def moved(match: re.Match[str]) -> str:
        body = base64.b64decode(match.group(0)).decode().replace(maintenance_aws.TASK_STATE, here)
        return base64.b64encode(body.encode()).decode()

    script = re.sub(r"(?<=echo )[A-Za-z0-9+/=]{40,}", moved, container["command"][0])
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    python = bindir / "python"  # the venv's interpreter (a symlink would lose the venv)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return subprocess.run([*container["entryPoint"], script.replace(maintenance_aws.TASK_STATE, here)],
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=Path(__file__).resolve().parents[1], env={"PATH": f"{bindir}:{os.environ['PATH']}", **env})


def test_the_maintenance_task_is_the_python_maintenance_with_the_stacks_config(
        cloud_with_tables: ProgramRun, tmp_path: Path) -> None:
    from infra.config import load_platform
    from infra.operations.config import OperationsConfig
    from infra.services.context import Side
    from infra.services.operations_config import host_paths, operations_config

    container = _task_container(cloud_with_tables, "lakehouse-maintenance")
    assert container["image"] == "lakehouse/operations:0.3.0"
    assert container["command"][0].endswith(
        "exec python -m infra.operations maintenance run --config /tmp/lakehouse/operations.json")
    # The config the task writes is the stack's operations config as a task sees it (written, then read back).
    done = _run_task_script(container, tmp_path, {})
    assert done.returncode == 2, done.stderr
    assert "name a job (or set $MAINTENANCE_JOB); known: expire_snapshots, rewrite_data_files" in done.stderr
    written = OperationsConfig.load(str(tmp_path / "task" / "operations.json"))
    spec = load_platform(_platform_with_tables())
    expected = operations_config(spec, "cloud", host_paths(spec, str(tmp_path / "task")), Side.INTERNAL)
    assert written == expected and written.trino is not None and written.trino.http_scheme == "https"
    # A job the stack does not schedule is refused by name before anything is reached.
    refused = _run_task_script(container, tmp_path / "again", {"MAINTENANCE_JOB": "compact_everything"})
    assert refused.returncode == 2
    assert "unknown maintenance job 'compact_everything'; known: expire_snapshots, rewrite_data_files" in refused.stderr
    # Its secrets are task secrets (Secrets Manager), never values in the task definition.
    assert {s["name"] for s in container["secrets"]} == {
        "LAKEHOUSE_SECRET_POLARIS_ROOT_SECRET", "LAKEHOUSE_SECRET_TRINO_PASSWORD_PLATFORM",
        "LAKEHOUSE_SECRET_TRINO_TLS_CERT"}
    assert all(not e["name"].startswith("LAKEHOUSE_SECRET_") for e in container["environment"])


def test_a_failing_statement_fails_the_tables_task(tmp_path: Path) -> None:
    statements = ["CREATE SCHEMA IF NOT EXISTS x", "SELECT FAIL_HERE", "CREATE TABLE never"]
    failed = _run(aws_tables.tables_script("http://trino:8080", statements), _fake_trino(tmp_path / "t"))
    assert failed.returncode != 0 and "TABLE_NOT_FOUND" in failed.stderr
    calls = (tmp_path / "t" / "calls").read_text().splitlines()
    assert [c.split("--execute ")[1] for c in calls] == ["SELECT 1", *statements[:2]]  # stopped at the failure


def _platform_with_tables() -> dict[str, Any]:
    platform = stack_platform("cloud")
    platform["tables"] = [
        {"namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
         "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
         "properties": {"comment": "the bookshop's orders"}}]
    return platform


@pytest.fixture(scope="module")
def cloud_with_tables() -> ProgramRun:
    return cached_run("cloud", _platform_with_tables())


def test_the_cloud_creates_declared_tables_through_trino_as_a_deployment_step(cloud_with_tables: ProgramRun) -> None:
    (step,) = cloud_with_tables.of_type("pulumi-python:dynamic/aws:EcsTaskRun")
    declared = tables.trino_statements("polaris", {
        "namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
        "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
        "properties": {"comment": "the bookshop's orders"}})
    import hashlib
    import json

    assert step.inputs["trigger"] == hashlib.sha256(json.dumps(declared).encode()).hexdigest()
    assert step.inputs["region"] == "eu-west-1" and step.inputs["labels"]["lakehouse.layer"] == "orchestration"
    assert {"lakehouse-logs-tables"} <= set(step.depends_on)
    task = next(t for t in cloud_with_tables.of_type("aws:ecs/taskDefinition:TaskDefinition")
                if t.name == "lakehouse-tables")
    script = json.loads(task.inputs["containerDefinitions"])[0]["command"][0]
    assert declared[1] in script.replace("'\"'\"'", "'")  # shlex-quoted in the script


def test_trino_may_set_the_properties_a_declared_table_carries() -> None:
    from infra.config import load_platform
    from infra.services import ServiceContext
    from infra.services.trino import config as trino

    platform = stack_platform("cloud")
    platform["tables"] = [{"namespace": "shop", "name": "orders", "owner": "o", "freshness_minutes": 5,
                           "columns": [{"name": "id", "type": "long"}], "properties": {"comment": "c"}}]
    files = trino.catalog_files(ServiceContext(load_platform(platform), "trino"))
    (line,) = [x for x in files["polaris.properties"].splitlines() if x.startswith("iceberg.allowed-extra-properties")]
    assert line.split("=", 1)[1].split(",") == [*tables.PROPERTY_KEYS, "comment"]


def test_each_schedule_names_its_job_and_the_job_its_tables(cloud_with_tables: ProgramRun) -> None:
    import json

    from infra.config import load_platform
    from infra.operations import maintenance
    from infra.services.context import Side
    from infra.services.operations_config import host_paths, operations_config

    jobs = {}
    for schedule in cloud_with_tables.of_type("aws:scheduler/schedule:Schedule"):
        (override,) = json.loads(schedule.inputs["target"]["input"])["containerOverrides"]
        assert override["name"] == "maintenance"
        (variable,) = override["environment"]
        assert variable["name"] == "MAINTENANCE_JOB"
        jobs[variable["value"]] = schedule.inputs["scheduleExpression"]
    assert jobs == {"expire_snapshots": "cron(0 3 * * ? *)", "rewrite_data_files": "cron(0 4 * * ? *)"}
    # Which tables a job runs on is the Python maintenance's own choice: shop.orders lists expire_snapshots
    # only, so the rewrite job of scope all skips it.
    spec = load_platform(_platform_with_tables())
    config = operations_config(spec, "cloud", host_paths(spec, "/tmp/lakehouse"), Side.INTERNAL)
    catalog = ["shop.orders", "probe.scratch"]
    assert maintenance.tables_for(config, "expire_snapshots", "all", catalog) == catalog
    assert maintenance.tables_for(config, "rewrite_data_files", "all", catalog) == ["probe.scratch"]


class FakeEcs:
    def __init__(self, exit_code: int):
        self.exit_code = exit_code
        self.started: list[dict[str, Any]] = []

    def run_task(self, **kwargs: Any) -> dict[str, Any]:
        self.started.append(kwargs)
        return {"tasks": [{"taskArn": "arn:aws:ecs:eu-west-1:1:task/c/abc"}], "failures": []}

    def describe_tasks(self, **_kwargs: Any) -> dict[str, Any]:
        return {"tasks": [{"lastStatus": "STOPPED", "stoppedReason": "Essential container in task exited",
                           "containers": [{"name": "tables", "exitCode": self.exit_code,
                                           "reason": "" if self.exit_code == 0 else "Error"}]}]}


PROPS = {"description": "declared tables", "cluster": "arn:cluster", "task_definition": "arn:task:1",
         "subnets": ["subnet-1"], "security_groups": ["sg-1"], "region": "eu-west-1", "trigger": "abc",
         "log_group": "/lakehouse/cloud/tables"}


def test_the_step_runs_the_task_to_a_clean_exit_and_reruns_only_on_change(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    fake = FakeEcs(0)
    monkeypatch.setattr(boto3, "client", lambda *_a, **_k: fake)
    provider = rt.EcsTaskRunProvider()
    created = provider.create(dict(PROPS))
    assert created.id == "arn:aws:ecs:eu-west-1:1:task/c/abc"
    assert fake.started[0]["networkConfiguration"]["awsvpcConfiguration"] == {
        "subnets": ["subnet-1"], "securityGroups": ["sg-1"], "assignPublicIp": "DISABLED"}
    assert not provider.diff("x", created.outs, dict(PROPS)).changes
    assert provider.diff("x", created.outs, {**PROPS, "trigger": "def"}).changes
    fake.exit_code = 1
    with pytest.raises(rt.EcsTaskFailed, match="tables exit 1"):
        provider.update("x", created.outs, {**PROPS, "trigger": "def"})


def test_the_step_provider_is_serialised_by_value() -> None:
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(rt.EcsTaskRunProvider())
    assert base64.b64decode(blob).count(b"infra.targets") == 0
    code = ("import base64, sys, dill\np = dill.loads(base64.b64decode(sys.stdin.read()))\n"
            "print(type(p).__name__, p.diff('x', {'trigger': 'a'}, {'trigger': 'b'}).changes)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["EcsTaskRunProvider", "True"]
