"""The maintenance schedule on aws (lakehouse_platform/services/maintenance_scheduler/aws.py): EventBridge Scheduler under Pulumi mocks,
one schedule per job naming it; the maintenance task's own command run here (the Python maintenance, its config
written and read back)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lakehouse_platform.config import load_platform
from lakehouse_platform.model import eventbridge_cron as scheduler_cron
from lakehouse_platform.services.maintenance_scheduler import aws as maintenance_aws
from tests.support.aws_graph import the
from tests.support.harness import ProgramRun
from tests.support.stacks import cloud_platform, cloud_with_tables_platform


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
                          cwd=Path(__file__).resolve().parents[2], env={"PATH": f"{bindir}:{os.environ['PATH']}", **env})


def test_the_maintenance_task_is_the_python_maintenance_with_the_stacks_config(
        cloud_with_tables: ProgramRun, tmp_path: Path) -> None:
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.runtime.config import OperationsConfig
    from lakehouse_platform.services.context import Side
    from lakehouse_platform.services.operations_config import host_paths, operations_config

    container = _task_container(cloud_with_tables, "lakehouse-maintenance")
    # The operations image the stack pushed, by digest (tests/targets/aws/test_images.py).
    assert re.fullmatch(r"\d{12}\.dkr\.ecr\.eu-west-1\.amazonaws\.com/lakehouse-cloud/operations@sha256:[0-9a-f]{64}",
                        container["image"]), container["image"]
    assert container["command"][0].endswith(
        "exec python -m lakehouse_platform.runtime maintenance run --config /tmp/lakehouse/operations.json")
    # The config the task writes is the stack's operations config as a task sees it (written, then read back).
    done = _run_task_script(container, tmp_path, {})
    assert done.returncode == 2, done.stderr
    assert "name a job (or set $MAINTENANCE_JOB); known: expire_snapshots, rewrite_data_files" in done.stderr
    written = OperationsConfig.load(str(tmp_path / "task" / "operations.json"))
    spec = load_platform(cloud_with_tables_platform())
    expected = operations_config(spec, "cloud", host_paths(spec, str(tmp_path / "task")), Side.INTERNAL)
    assert written == expected and written.engine is not None and written.engine.http_scheme == "https"
    # A job the stack does not schedule is refused by name before anything is reached.
    refused = _run_task_script(container, tmp_path / "again", {"MAINTENANCE_JOB": "compact_everything"})
    assert refused.returncode == 2
    assert "unknown maintenance job 'compact_everything'; known: expire_snapshots, rewrite_data_files" in refused.stderr
    # Its secrets are task secrets (Secrets Manager), never values in the task definition.
    assert {s["name"] for s in container["secrets"]} == {
        "LAKEHOUSE_SECRET_POLARIS_CLIENT_SECRET_WRITER", "LAKEHOUSE_SECRET_TRINO_PASSWORD_WRITER",
        "LAKEHOUSE_SECRET_TRINO_TLS_CERT"}  # governance.maintenance's, never the platform's
    assert all(not e["name"].startswith("LAKEHOUSE_SECRET_") for e in container["environment"])


# -- under Pulumi mocks --------------------------------------------------------------------------------------


def test_each_schedule_names_its_job_and_the_job_its_tables(cloud_with_tables: ProgramRun) -> None:
    import json

    from lakehouse_platform.config import load_platform
    from lakehouse_platform.runtime import maintenance
    from lakehouse_platform.services.context import Side
    from lakehouse_platform.services.operations_config import host_paths, operations_config

    jobs = {}
    for schedule in cloud_with_tables.of_type("aws:scheduler/schedule:Schedule"):
        (override,) = json.loads(schedule.inputs["target"]["input"])["containerOverrides"]
        assert override["name"] == "maintenance"
        (variable,) = override["environment"]
        assert variable["name"] == "MAINTENANCE_JOB"
        jobs[variable["value"]] = schedule.inputs["scheduleExpression"]
    assert jobs == {"expire_snapshots": "cron(0,15,30,45 * * * ? *)", "rewrite_data_files": "cron(0 4 * * ? *)"}
    # Which tables a job runs on is the Python maintenance's own choice: shop.orders lists expire_snapshots
    # only, so the rewrite job of scope all skips it.
    spec = load_platform(cloud_with_tables_platform())
    config = operations_config(spec, "cloud", host_paths(spec, "/tmp/lakehouse"), Side.INTERNAL)
    catalog = ["shop.orders", "probe.scratch"]
    assert maintenance.tables_for(config, "expire_snapshots", "all", catalog) == catalog
    assert maintenance.tables_for(config, "rewrite_data_files", "all", catalog) == ["probe.scratch"]


def test_maintenance_runs_on_eventbridge_scheduler(cloud: ProgramRun) -> None:
    spec = load_platform(cloud_platform())
    schedules = cloud.of_type("aws:scheduler/schedule:Schedule")
    assert len(schedules) == len(spec.maintenance) == 2
    group = the(cloud, "aws:scheduler/scheduleGroup:ScheduleGroup").inputs
    assert group["tags"]["lakehouse.owner"] == "data engineering"
    for schedule, job in zip(schedules, spec.maintenance, strict=True):
        target = schedule.inputs["target"]
        assert schedule.inputs["scheduleExpression"] == scheduler_cron(job.schedule)
        assert schedule.inputs["groupName"] == group["name"]
        assert target["arn"] == "arn:aws:ecs:eu-west-1:123456789012:lakehouse-compute"
        assert target["ecsParameters"]["tags"]["lakehouse.owner"] == "data engineering"
        assert target["ecsParameters"]["tags"]["lakehouse.layer"] == "orchestration"
        assert target["deadLetterConfig"]["arn"].endswith("lakehouse-maintenance-dlq")
        overrides = json.loads(target["input"])["containerOverrides"][0]["environment"]
        assert overrides == [{"name": "MAINTENANCE_JOB", "value": job.action}]  # one job per action here


@pytest.mark.parametrize(("cron", "expected"), [
    ("0 3 * * *", "cron(0 3 * * ? *)"),
    ("30 2 * * 0", "cron(30 2 ? * SUN *)"),
    ("30 2 * * 7", "cron(30 2 ? * SUN *)"),
    ("0 4 * * 1-5", "cron(0 4 ? * MON-FRI *)"),
    ("*/15 * * * 6,0", "cron(0,15,30,45 * ? * SUN,SAT *)"),
    ("0 1 1 * *", "cron(0 1 1 * ? *)"),
    ("0 1 1-7,15 jan-mar *", "cron(0 1 1-7,15 1-3 ? *)"),
])
def test_scheduler_cron(cron: str, expected: str) -> None:
    assert scheduler_cron(cron) == expected
