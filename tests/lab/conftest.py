"""The lab tests' engine: the one ``lakehouse_platform.control`` finds (DOCKER_HOST, else the project's own), or a skip."""

from __future__ import annotations

from typing import Any

import pytest

from lakehouse_platform.control import docker_stack, services


@pytest.fixture(scope="module")
def engine() -> Any:
    """A client of the engine that answers here; the module skips (saying how to start one) where none does."""
    try:
        docker_stack.engine()
    except docker_stack.NotReady as exc:
        pytest.skip(str(exc))
    return services.docker_client()
