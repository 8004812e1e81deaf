"""``EcsTaskRun`` (lakehouse_platform/components/aws/run_task.py) against a stand-in ECS API: runs the task to a clean exit, reruns only on
change, and its provider is serialised by value."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from typing import Any

import pytest

from lakehouse_platform.components.aws import run_task as rt
from tests.support import REPO_ROOT


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
    # New provider code only (an upgrade): recorded by an update that does not run the task again.
    olds, news = {**created.outs, "__provider": "old code"}, {**PROPS, "__provider": "new code"}
    assert provider.diff("x", olds, news).changes
    assert provider.update("x", olds, news).outs["__provider"] == "new code" and len(fake.started) == 1
    fake.exit_code = 1
    with pytest.raises(rt.EcsTaskFailed, match="tables exit 1"):
        provider.update("x", created.outs, {**PROPS, "trigger": "def"})


def test_the_step_provider_loads_by_reference_in_a_provider_process() -> None:
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(rt.EcsTaskRunProvider())
    assert str(REPO_ROOT).encode() not in base64.b64decode(blob), "no path of the checkout in the state"
    code = ("import base64, sys, dill\np = dill.loads(base64.b64decode(sys.stdin.read()))\n"
            "print(type(p).__name__, p.diff('x', {'trigger': 'a'}, {'trigger': 'b'}).changes)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], input=blob, cwd="/", env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["EcsTaskRunProvider", "True"]
