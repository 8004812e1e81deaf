"""The tests' stacks' ``lakehouse:platform`` objects, read from their own stack files (``tests/support/stack_files``,
``isolated.FIXTURES``), never from the example stack files a team edits; a fresh copy on every call."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.config import load_platform
from lakehouse_platform.control.isolated import fixture_platform
from lakehouse_platform.model import PlatformSpec


def stack_platform(stack: str) -> dict[str, Any]:
    """The ``lakehouse:platform`` object of a test stack (a fresh copy), over its ``lakehouse:extends`` stack's."""
    return fixture_platform(stack)


def cloud_platform() -> dict[str, Any]:
    """The cloud test stack's ``lakehouse:platform`` object (a fresh copy)."""
    return stack_platform("cloud")


def built_lab_platform(**services: dict[str, Any]) -> dict[str, Any]:
    """The offline lab (its ``Pulumi.lab-offline.yaml``: the lab with built images, no registry here, and without Polaris
    and Lakekeeper, no artifact to build them from): what CI's lab stage runs; ``services`` overrides entries of its
    ``services``."""
    platform = stack_platform("lab-offline")
    platform.setdefault("services", {}).update(services)
    return platform


def with_changes(**aws_changes: Any) -> dict[str, Any]:
    """The cloud stack's object with its ``aws`` section changed."""
    platform = cloud_platform()
    platform["aws"] = {**platform.get("aws", {}), **aws_changes}
    return platform


def native_spec() -> PlatformSpec:
    """The native stack's spec, validated."""
    return load_platform(stack_platform("native"))


def cloud_with_tables_platform() -> dict[str, Any]:
    """The cloud stack's object with one declared table (the declared-tables task, the maintenance jobs' tables)."""
    platform = stack_platform("cloud")
    platform["tables"] = [
        {"namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
         "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
         "properties": {"comment": "the bookshop's orders"}}]
    return platform


def spec_of(stack: str) -> PlatformSpec:
    """A test stack's spec, validated (what ``config.load_stack`` gives for the project's own stack files)."""
    return load_platform(stack_platform(stack), source=f"Pulumi.{stack}.yaml")
