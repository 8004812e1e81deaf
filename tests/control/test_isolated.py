"""Isolated stacks (tests, benchmarks) never share a port with the user's own native stack, nor with each other."""

from __future__ import annotations

import itertools

import pytest

from lakehouse_platform.config import load_platform
from lakehouse_platform.control.isolated import BLOCK_SIZE, STACKS, first_port_of, isolated_platform
from tests.support.stacks import spec_of


def bound_ports(platform: dict) -> list[int]:
    spec = load_platform(platform)
    return [port.bound for svc in spec.enabled_services().values() for port in svc.ports.values()]


@pytest.mark.parametrize("name", STACKS)
def test_every_port_of_an_isolated_stack_lies_in_its_own_block(name: str) -> None:
    platform, ports = isolated_platform(name)
    bound = bound_ports(platform)
    start = first_port_of(name)
    assert sorted(bound) == list(ports) and len(set(bound)) == len(bound)
    assert all(start <= port < start + BLOCK_SIZE for port in bound)
    native = {port.bound for svc in spec_of("native").enabled_services().values() for port in svc.ports.values()}
    assert not native & set(bound), "an isolated stack must not bind a port of the user's `make up` platform"


def test_blocks_do_not_overlap_and_stay_below_the_ephemeral_range() -> None:
    starts = sorted(first_port_of(name) for name in STACKS)
    assert all(b - a >= BLOCK_SIZE for a, b in itertools.pairwise(starts))
    assert starts[-1] + BLOCK_SIZE <= 32768


def test_a_port_base_moves_every_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEHOUSE_PORT_BASE", "27000")
    assert first_port_of("verify") == 27000 and first_port_of("e2e") == 27000 + BLOCK_SIZE
    monkeypatch.setenv("LAKEHOUSE_PORT_BASE", "32700")
    with pytest.raises(ValueError, match="below the kernel's ephemeral ports"):
        first_port_of("probe-faults")


def test_the_verify_stack_gives_the_governance_matrix_answers_that_differ_per_namespace() -> None:
    from lakehouse_platform.config import load_platform
    from lakehouse_platform.control.isolated import VERIFY_GOVERNANCE, isolated_platform

    spec = load_platform(isolated_platform("verify", overrides=VERIFY_GOVERNANCE)[0])
    answers = {name: (spec.access_of(name)["canary_a"], spec.access_of(name)["canary_b"]) for name in spec.identities}
    assert answers == {"platform": (("read", "write", "manage"),) * 2, "writer": (("read", "write", "manage"),) * 2,
                       "reader": (("read",),) * 2, "team-a": (("read", "write", "manage"), ("read",)),
                       "team-b": ((), ("read", "write"))}
    assert spec.identities["writer"].team == "bookshop data engineering"  # the stack's own identities kept


def test_the_blocks_and_a_lab_run_fit_between_two_checkouts_bases() -> None:
    """Checkouts on one host take bases 1000 apart: every block, and the lab run's published ports after them
    (``lakehouse_platform.lab.runner.first_run_port``), stay below the next base."""
    from lakehouse_platform.lab.runner import first_run_port
    from tests.support.stacks import spec_of

    base = 25000
    env = {"LAKEHOUSE_PORT_BASE": str(base)}
    run_start = first_run_port(env)
    published = sum(1 for svc in spec_of("lab").enabled_services().values()
                    for port in svc.ports.values() if port.external is not None)
    assert run_start == base + len(STACKS) * BLOCK_SIZE, "the run's ports start after the last block"
    assert run_start + published <= base + 1000
