"""The stacks' ``lakehouse:platform`` objects, read from the real stack files (a fresh copy on every call)."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from infra.config import CONFIG_KEY, read_stack_config
from infra.paths import PROJECT_ROOT


def stack_platform(stack: str) -> dict[str, Any]:
    """The ``lakehouse:platform`` object of a stack file (a fresh copy)."""
    return copy.deepcopy(read_stack_config(PROJECT_ROOT / f"Pulumi.{stack}.yaml")[CONFIG_KEY])


def cloud_platform() -> dict[str, Any]:
    """Pulumi.cloud.yaml's ``lakehouse:platform`` object (a fresh copy)."""
    document = yaml.safe_load((PROJECT_ROOT / "Pulumi.cloud.yaml").read_text())
    return copy.deepcopy(document["config"]["lakehouse:platform"])


def with_changes(**aws_changes: Any) -> dict[str, Any]:
    """The cloud stack's object with its ``aws`` section changed."""
    platform = cloud_platform()
    platform["aws"] = {**platform.get("aws", {}), **aws_changes}
    return platform
