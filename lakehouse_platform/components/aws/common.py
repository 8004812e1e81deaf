"""Helpers every layer module of the aws target shares: tags, names, sizes, policies."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pulumi

from lakehouse_platform.layers.base import layer_labels
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.model.aws import FARGATE_SIZES

# AWS tag values allow letters, digits, white space and _ . : / = + - @ only ("each engine's team" has a quote).
_TAG_VALUE_DISALLOWED = re.compile(r"[^\w\s.:/=+\-@]", re.UNICODE)


def tag_value(value: str) -> str:
    """A value AWS accepts as a tag: disallowed characters dropped, white space collapsed, 256 at most."""
    return " ".join(_TAG_VALUE_DISALLOWED.sub("", value).split())[:256]


def layer_tags(spec: PlatformSpec, layer: Layer, service: str | None = None, **extra: str) -> dict[str, str]:
    """The layer's labels as AWS tags (lakehouse.layer, lakehouse.owner, ...), plus any extra ones."""
    tags = {key: tag_value(value) for key, value in layer_labels(spec, layer, service).items()}
    tags.update({key: tag_value(value) for key, value in extra.items()})
    return tags


def physical_name(spec: PlatformSpec, *parts: str, limit: int = 32) -> str:
    """A stack-unique physical name within ``limit`` characters (load balancers, target groups: 32)."""
    full = "-".join([spec.name, pulumi.get_stack(), *parts])
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:6]
    return f"{full[: limit - 7].rstrip('-')}-{digest}"


def log_group_name(spec: PlatformSpec, source: str) -> str:
    """The CloudWatch log group of one service, job or managed engine (created by the observability layer)."""
    return f"/{spec.name}/{pulumi.get_stack()}/{source}"


def fargate_size(memory_mib: int, min_cpu: int = 256) -> tuple[int, int]:
    """The smallest Fargate (cpu, memory) whose memory holds ``memory_mib`` with at least ``min_cpu`` units."""
    for cpu, memories in FARGATE_SIZES.items():
        if cpu < min_cpu:
            continue
        for memory in memories:
            if memory >= memory_mib:
                return cpu, memory
    raise ValueError(f"{memory_mib} MiB is more than one Fargate task can hold")


def policy_document(*statements: dict[str, Any]) -> pulumi.Output[str]:
    """An IAM policy document (JSON) from statements that may hold Outputs."""
    return pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": list(statements)})


def assume_role_policy(service: str, account_id: pulumi.Input[str] | None = None) -> pulumi.Output[str]:
    """Trust policy for an AWS service principal, limited to this account when ``account_id`` is given."""
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": "sts:AssumeRole",
    }
    if account_id is not None:
        statement["Condition"] = {"StringEquals": {"aws:SourceAccount": account_id}}
    return policy_document(statement)


def to_json(value: Any) -> pulumi.Output[str]:
    """JSON of a value that may hold Outputs (container definitions, policies)."""
    return pulumi.Output.json_dumps(value)
