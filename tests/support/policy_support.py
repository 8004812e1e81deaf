"""Shared by the policy tests: each stack's resources as the pack sees them, and hand-made aws resources.

The program runs under Pulumi mocks for each stack (tests/support/harness.py); every registered resource
is turned into the rules' plain data exactly as the pack would see it (wire names, secrets in wire
form, URNs carrying the parent chain). The per-domain test files (tests/policies/test_<domain>.py)
then mutate a resource (or the config) and assert the exact message of the rule it breaks. Rules
for the aws target are also exercised on small hand-made resources, so they are tested whatever
state the aws target is in.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from lakehouse_platform.control.isolated import FIXTURES
from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.registry import policy, run_policy
from lakehouse_platform.policies.resources import Resource, StackContext
from lakehouse_platform.policies.wire import UNKNOWN_STRING, secret
from tests.support.harness import Registered, cached_run

ROOT = FIXTURES  # the tests' own stack files, never the examples a team edits
PROJECT = "lakehouse-platform"
__all__ = ["PROJECT", "ROOT", "UNKNOWN_STRING", "aws", "cloud_context", "ecs_task", "graph", "isolated_pulumi_env", "lab", "named",
           "replace_env", "secret", "set_label", "stack_platform", "to_resources", "violations", "warehouse_bucket"]


# --------------------------------------------------------------------------------------------
# Running a stack under mocks and turning its resources into the rules' plain data
# --------------------------------------------------------------------------------------------


def stack_platform(stack: str) -> dict[str, Any]:
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return document["config"]["lakehouse:platform"]


def to_resources(registered: list[Registered], stack: str) -> list[Resource]:
    """The mocks' records as the engine would show them: URNs with the parent type chain, parent URNs."""
    by_key = {(r.type, r.name): r for r in registered}

    def parent_of(r: Registered) -> Registered | None:
        return by_key.get((r.parent_type or "", r.parent or ""))

    def qualified(r: Registered) -> str:
        parent = parent_of(r)
        return f"{qualified(parent)}${r.type}" if parent is not None else r.type

    def urn(r: Registered) -> str:
        return f"urn:pulumi:{stack}::{PROJECT}::{qualified(r)}::{r.name}"

    return [
        Resource(r.type, r.name, copy.deepcopy(r.inputs), urn(r),
                 urn(parent) if (parent := parent_of(r)) is not None else None, id=f"{r.name}-id")
        for r in registered
    ]


_GRAPHS: dict[str, tuple[list[Resource], StackContext]] = {}


def graph(stack: str) -> tuple[list[Resource], StackContext]:
    """(resources, context) of a stack, run once per session."""
    if stack not in _GRAPHS:
        # The policies judge the declaration, not the host: the harness checks no ports, needs no cache.
        run = cached_run(stack, stack_platform(stack))
        context = StackContext.from_dict(pack_config.context_for_stack(stack, ROOT))
        _GRAPHS[stack] = (to_resources(run.resources, stack), context)
    resources, context = _GRAPHS[stack]
    return copy.deepcopy(resources), context


def isolated_pulumi_env(tmp_path: Path, passphrase: str) -> dict[str, str]:
    """The project's Pulumi environment, with a throwaway file backend and passphrase."""
    from lakehouse_platform.control.workspace import pulumi_env

    return {**pulumi_env(), "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": passphrase}


def named(resources: list[Resource], name: str, type_: str | None = None) -> Resource:
    matches = [r for r in resources if r.name == name and (type_ is None or r.type == type_)]
    assert len(matches) == 1, f"expected one resource {name!r}, found {len(matches)}"
    return matches[0]


def violations(name: str, resources: list[Resource], context: StackContext | None) -> list[str]:
    return [str(v) for v in run_policy(policy(name), resources, context)]


def lab() -> tuple[list[Resource], StackContext]:
    return graph("lab")


def set_label(resource: Resource, key: str, value: str | None) -> None:
    labels = [item for item in resource.props["labels"] if item["label"] != key]
    if value is not None:
        labels.append({"label": key, "value": value})
    resource.props["labels"] = labels


# --------------------------------------------------------------------------------------------
# Hand-made aws resources (the aws rules are tested whatever state the aws target is in)
# --------------------------------------------------------------------------------------------


def cloud_context() -> StackContext:
    return StackContext.from_dict(pack_config.context_for_stack("cloud", ROOT))


def aws(type_: str, name: str, layer: str, props: dict[str, Any], service: str | None = None,
        tags: bool = True) -> Resource:
    component = f"platform:layers:{layer.capitalize()}"
    urn = f"urn:pulumi:cloud::{PROJECT}::{component}${type_}::{name}"
    props = dict(props)
    if tags:
        context = cloud_context()
        props["tags"] = {"lakehouse.platform": "lakehouse", "lakehouse.layer": layer,
                         "lakehouse.owner": context.owner_of(layer, service) or ""}
        if service:
            props["tags"]["lakehouse.service"] = service
    return Resource(type_, name, props, urn, f"urn:pulumi:cloud::{PROJECT}::{component}::lakehouse-{layer}",
                    id=f"{name}-id")


def warehouse_bucket(**extra: Any) -> list[Resource]:
    bucket = aws("aws:s3/bucket:Bucket", "warehouse", "storage", {"bucket": "lakehouse-warehouse-prod"})
    versioning = aws("aws:s3/bucketVersioning:BucketVersioning", "warehouse-versioning", "storage",
                     {"bucket": "lakehouse-warehouse-prod", "versioningConfiguration": {"status": "Enabled"}}, tags=False)
    encryption = aws("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
                     "warehouse-sse", "storage",
                     {"bucket": "warehouse-id", "rules": [{"applyServerSideEncryptionByDefault": {
                         "sseAlgorithm": "aws:kms", "kmsMasterKeyId": "arn:aws:kms:eu-west-1:1:key/k"},
                         "bucketKeyEnabled": True}]}, tags=False)
    block = aws("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "warehouse-pab", "storage",
                {"bucket": "lakehouse-warehouse-prod", "blockPublicAcls": True, "blockPublicPolicy": True,
                 "ignorePublicAcls": True, "restrictPublicBuckets": True}, tags=False)
    parts = {"versioning": versioning, "encryption": encryption, "block": block}
    for key, value in extra.items():
        if value is None:
            parts.pop(key)
        else:
            parts[key].props.update(value)
    return [bucket, *parts.values()]


def ecs_task(name: str, containers: list[dict[str, Any]], service: str, layer: str = "compute",
             memory: str | None = "4096") -> Resource:
    props: dict[str, Any] = {"family": f"lakehouse-cloud-{name}", "containerDefinitions": json.dumps(containers)}
    if memory is not None:
        props["memory"] = memory
    return aws("aws:ecs/taskDefinition:TaskDefinition", name, layer, props, service=service)


def replace_env(resource: Resource, name: str, value: str) -> None:
    envs = resource.props["envs"]
    wrapped = isinstance(envs, dict)
    entries = envs["value"] if wrapped else envs
    entries = [e for e in entries if not e.startswith(name + "=")] + [f"{name}={value}"]
    resource.props["envs"] = secret(entries) if wrapped else entries

