"""What the lab hands pulumi-docker is what the provider reads back from the engine: a second `pulumi up` has
nothing to change.

Read in the provider's upstream (kreuzwerker/terraform-provider-docker v4.5.0, pulumi-docker's submodule,
internal/provider/resource_docker_container_funcs.go): the engine sets ``MemorySwap`` to twice ``Memory`` when
it is not given, and the provider, whose ``memory_swap`` is not computed, then shows ``~ memorySwap`` on every
preview; and the health check's durations are read back as Go's ``time.Duration.String()`` (``5m0s``), so
``300s`` differs from what the engine holds.
"""

from __future__ import annotations

import re

import pytest

from lakehouse_platform.targets.docker import go_duration
from tests.support.harness import ProgramRun

GO_DURATION = re.compile(r"^(?:[1-9]\d*h(?:[0-5]?\d)m(?:[0-5]?\d)s|[1-5]?\dm(?:[0-5]?\d)s|[1-5]?\ds)$")


def containers(run: ProgramRun):
    return run.of_type("docker:index/container:Container")


def test_every_container_with_a_memory_limit_sets_its_swap_to_the_same(lab_run: ProgramRun) -> None:
    limited = [c for c in containers(lab_run) if c.inputs.get("memory")]
    assert limited, "the lab sets memory limits"
    assert {c.name: c.inputs.get("memorySwap") for c in limited} == {c.name: c.inputs["memory"] for c in limited}


def test_health_check_durations_are_written_as_the_provider_reads_them_back(lab_run: ProgramRun) -> None:
    checks = {c.name: c.inputs["healthcheck"] for c in containers(lab_run) if c.inputs.get("healthcheck")}
    assert checks
    for name, check in checks.items():
        for key in ("interval", "timeout", "startPeriod"):
            assert GO_DURATION.match(check[key]), (name, key, check[key])
    assert checks["catalog-backup"]["startPeriod"] == "5m0s"  # its 300 s grace, as the engine reports it


@pytest.mark.parametrize(("seconds", "expected"), [
    (0, "0s"), (5, "5s"), (59, "59s"), (60, "1m0s"), (90, "1m30s"), (300, "5m0s"), (3600, "1h0m0s"),
    (3723, "1h2m3s"),
])
def test_go_duration(seconds: int, expected: str) -> None:
    assert go_duration(seconds) == expected
