"""Look-ups in the cloud graph a program run registered under mocks (tests.support.harness): one resource of a type,
one by name, the ECS containers and services, the buckets' sub-resources, the policies, the runs the checks share."""

from __future__ import annotations

import base64
import inspect
import json
import re
from functools import cache
from typing import Any

import pulumi_aws as aws

from lakehouse_platform.model import LAYER_NAMES
from tests.support.harness import ProgramRun, Registered

LAYER_COMPONENTS = {f"lakehouse-{layer}": layer for layer in LAYER_NAMES}
ALL_RUNS = ["cloud", "five_workers_no_spark", "streaming"]  # the fixtures of tests/conftest.py
BUCKET = "aws:s3/bucket:Bucket"
TASK = "aws:ecs/taskDefinition:TaskDefinition"


@cache
def accepts_tags(token: str) -> bool:
    """Whether the pulumi-aws resource class of a type token takes a ``tags`` input."""
    module, name = token.split(":")[1].split("/")[0], token.split(":")[2]
    cls = getattr(aws if module == "index" else getattr(aws, module), name)
    return "tags" in inspect.signature(cls._internal_init).parameters


def aws_resources(run: ProgramRun) -> list[Registered]:
    """Every AWS resource of the run (no components, no providers)."""
    return [r for r in run.resources if r.type.startswith("aws:")]


def the(run: ProgramRun, token: str) -> Registered:
    """The one resource of a type (fails if there are none or several)."""
    found = run.of_type(token)
    assert len(found) == 1, f"expected one {token}, found {[r.name for r in found]}"
    return found[0]


def named(run: ProgramRun, token: str, name: str) -> Registered:
    """The one resource of a type with a logical name."""
    found = [r for r in run.of_type(token) if r.name == name]
    assert len(found) == 1, f"expected one {token} named {name}"
    return found[0]


def resource_id(resource: Registered) -> str:
    """The id the mocks give a resource (what other resources' inputs reference)."""
    return f"{resource.name}-id"


def containers(run: ProgramRun) -> list[tuple[str, dict[str, Any]]]:
    """Every ECS container definition, with the name of its task definition."""
    return [(task.name, c) for task in run.of_type("aws:ecs/taskDefinition:TaskDefinition")
            for c in json.loads(task.inputs["containerDefinitions"])]


def ecs_service(run: ProgramRun, name: str) -> Registered:
    """The ECS service of a name (its ``name`` input, not the logical name)."""
    found = [r for r in run.of_type("aws:ecs/service:Service") if r.inputs.get("name") == name]
    assert len(found) == 1, f"expected one ECS service {name!r}"
    return found[0]


def buckets_of(run: ProgramRun, token: str) -> dict[str, Registered]:
    """Bucket sub-resources (versioning, encryption, ...) keyed by the bucket id they configure."""
    return {r.inputs["bucket"]: r for r in run.of_type(token)}


def container_of_task(run: ProgramRun, task: str) -> dict[str, Any]:
    """The one container definition of the task definition named ``task``."""
    (definition,) = json.loads(named(run, TASK, task).inputs["containerDefinitions"])
    return definition


def policy(run: ProgramRun, name: str) -> dict[str, Any]:
    """The policy document of the resource named ``name`` (a role policy, a bucket or topic policy)."""
    return json.loads(run.named(name).inputs["policy"])


def written_files(script: str) -> dict[str, str]:
    """path -> content of each file a task's start script writes (``files_then_exec``: base64, then exec)."""
    return {path: base64.b64decode(encoded).decode()
            for encoded, path in re.findall(r"echo (\S+) \| base64 -d > (\S+)", script)}
