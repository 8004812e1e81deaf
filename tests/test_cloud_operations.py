"""The operating layers on aws: the maintenance and tables scripts run for real against a stand-in Trino CLI,
the declared-tables task as a deployment step (EcsTaskRun) under mocks and against a stand-in ECS API."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import stack_platform
from harness import ProgramRun, cached_run

from infra.operations import tables
from infra.services.maintenance_scheduler import aws as maintenance_aws
from infra.targets.aws import run_task as rt
from infra.targets.aws import tables as aws_tables

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


@pytest.mark.parametrize(("scope", "lists", "expected"), [
    ("all", {"SKIP_TABLES": "shop.customers"}, ["shop.orders", "probe.scratch"]),
    ("declared", {"ONLY_TABLES": "shop.orders,shop.customers"}, ["shop.orders", "shop.customers"]),
    ("declared", {"ONLY_TABLES": ""}, []),
])
def test_the_maintenance_task_runs_the_action_on_its_tables_with_its_threshold(
        tmp_path: Path, scope: str, lists: dict[str, str], expected: list[str]) -> None:
    env = {**_fake_trino(tmp_path), "MAINTENANCE_ACTION": "expire_snapshots", "OLDER_THAN_DAYS": "3",
           "SCOPE": scope, **lists}
    done = _run(maintenance_aws.maintenance_script("http://trino:8080", "polaris"), env)
    assert done.returncode == 0, done.stderr
    calls = Path(env["TRINO_CALLS"]).read_text().splitlines()[1:]  # after the listing
    assert [c.split("EXECUTE")[0].split("ALTER TABLE ")[1].strip() for c in calls] == [
        'polaris."{}"."{}"'.format(*t.split(".")) for t in expected]
    for call in calls:
        assert call.startswith("--server http://trino:8080 --user platform-maintenance --output-format TSV "
                               "--session polaris.expire_snapshots_min_retention=3d --execute ALTER TABLE")
        assert call.endswith("EXECUTE expire_snapshots(retention_threshold => '3d')")


def test_a_rewrite_needs_no_threshold_and_a_failing_statement_fails_the_task(tmp_path: Path) -> None:
    env = {**_fake_trino(tmp_path), "MAINTENANCE_ACTION": "rewrite_data_files", "OLDER_THAN_DAYS": "7"}
    done = _run(maintenance_aws.maintenance_script("http://trino:8080", "polaris"), env)
    assert done.returncode == 0, done.stderr
    assert all("--session" not in c and c.endswith("EXECUTE optimize")
               for c in Path(env["TRINO_CALLS"]).read_text().splitlines()[1:])
    statements = ["CREATE SCHEMA IF NOT EXISTS x", "SELECT FAIL_HERE", "CREATE TABLE never"]
    failed = _run(aws_tables.tables_script("http://trino:8080", statements), _fake_trino(tmp_path / "t"))
    assert failed.returncode != 0 and "TABLE_NOT_FOUND" in failed.stderr
    calls = (tmp_path / "t" / "calls").read_text().splitlines()
    assert [c.split("--execute ")[1] for c in calls] == ["SELECT 1", *statements[:2]]  # stopped at the failure


@pytest.fixture(scope="module")
def cloud_with_tables() -> ProgramRun:
    platform = stack_platform("cloud")
    platform["tables"] = [
        {"namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
         "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
         "properties": {"comment": "the bookshop's orders"}}]
    return cached_run("cloud", platform)


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


def test_each_schedule_carries_its_jobs_table_filter(cloud_with_tables: ProgramRun) -> None:
    import json

    schedules = cloud_with_tables.of_type("aws:scheduler/schedule:Schedule")
    environments = {}
    for schedule in schedules:
        env = json.loads(schedule.inputs["target"]["input"])["containerOverrides"][0]["environment"]
        variables = {e["name"]: e["value"] for e in env}
        environments[variables["MAINTENANCE_ACTION"]] = variables
    # shop.orders lists expire_snapshots only: the rewrite job of scope all skips it.
    assert environments["expire_snapshots"]["SKIP_TABLES"] == ""
    assert environments["rewrite_data_files"] == {"MAINTENANCE_ACTION": "rewrite_data_files",
                                                  "OLDER_THAN_DAYS": "7", "SCOPE": "all",
                                                  "SKIP_TABLES": "shop.orders"}


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
