"""Shared fixtures: stack configs read from the real stack files."""

from __future__ import annotations

import copy

import pytest

from infra.config import CONFIG_KEY, read_stack_config
from infra.paths import PROJECT_ROOT


def stack_platform(stack: str) -> dict:
    """The ``lakehouse:platform`` object of a stack file (a fresh copy)."""
    return copy.deepcopy(read_stack_config(PROJECT_ROOT / f"Pulumi.{stack}.yaml")[CONFIG_KEY])


@pytest.fixture
def lab_platform() -> dict:
    return stack_platform("lab")


@pytest.fixture(scope="module")
def lab_run():
    """The lab program evaluated once under mocks (docker provider mocked: no engine here)."""
    from harness import cached_run

    return cached_run("lab", stack_platform("lab"))


@pytest.fixture(scope="session")
def native_run():
    """The native program evaluated once per session under mocks (FakeResolver: no cache, no ports)."""
    from harness import cached_run

    return cached_run("native", stack_platform("native"))


@pytest.fixture(scope="session")
def cloud_run():
    """The cloud program evaluated once per session under mocks (the aws provider mocked: no account here)."""
    from harness import cached_run

    return cached_run("cloud", stack_platform("cloud"))
