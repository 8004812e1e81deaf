"""Declared tables on aws (infra/targets/aws/tables.py): under Pulumi mocks, created through Trino by a one-off ECS task,
a deployment step that reruns when the declarations change; its script, run for real against a stand-in Trino CLI,
stops at the first failing statement."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

from infra.operations import tables
from infra.targets.aws import tables as aws_tables
from tests.support.harness import ProgramRun


def test_the_cloud_creates_declared_tables_through_trino_as_a_deployment_step(cloud_with_tables: ProgramRun) -> None:
    (step,) = cloud_with_tables.of_type("pulumi-python:dynamic/aws:EcsTaskRun")
    declared = tables.trino_statements("polaris", {
        "namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
        "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
        "properties": {"comment": "the bookshop's orders"}})

    assert step.inputs["trigger"] == hashlib.sha256(json.dumps(declared).encode()).hexdigest()
    assert step.inputs["region"] == "eu-west-1" and step.inputs["labels"]["lakehouse.layer"] == "orchestration"
    assert {"lakehouse-logs-tables"} <= set(step.depends_on)
    task = next(t for t in cloud_with_tables.of_type("aws:ecs/taskDefinition:TaskDefinition")
                if t.name == "lakehouse-tables")
    script = json.loads(task.inputs["containerDefinitions"])[0]["command"][0]
    assert declared[1] in script.replace("'\"'\"'", "'")  # shlex-quoted in the script


# -- the tables script against a stand-in Trino CLI ----------------------------------------------------------


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


def test_a_failing_statement_fails_the_tables_task(tmp_path: Path) -> None:
    statements = ["CREATE SCHEMA IF NOT EXISTS x", "SELECT FAIL_HERE", "CREATE TABLE never"]
    failed = _run(aws_tables.tables_script("http://trino:8080", statements), _fake_trino(tmp_path / "t"))
    assert failed.returncode != 0 and "TABLE_NOT_FOUND" in failed.stderr
    calls = (tmp_path / "t" / "calls").read_text().splitlines()
    assert [c.split("--execute ")[1] for c in calls] == ["SELECT 1", *statements[:2]]  # stopped at the failure
