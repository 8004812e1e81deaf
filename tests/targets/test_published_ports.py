"""The lab's published ports (issue 24, item 4): checked before any resource is made, and moved by one setting.

A port the lab publishes that something else holds stops the program before it registers anything, naming the key,
the port and what holds it (a real listening socket of this test process, found by psutil); the stack's own
container holding its port is no conflict. ``lab.published_port_offset`` moves every published port at once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pulumi
import pytest

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.targets import published_ports
from lakehouse_platform.targets.published_ports import Publisher
from tests.support.harness import RecordingMocks, run_program
from tests.support.stacks import stack_platform


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port on 127.0.0.1 this test process listens on (what a native platform's server would be)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def lab_with_trino_on(port: int) -> dict:
    platform = stack_platform("lab")
    platform.setdefault("services", {}).setdefault("trino", {})["ports"] = {
        "http": {"internal": 8080, "external": port}, "https": {"internal": 8443, "external": 48443}}
    return platform


def test_a_taken_published_port_stops_the_lab_before_any_resource_naming_what_holds_it(held_port, monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)  # the engine is this host's: its ports are checked
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_program("lab", lab_with_trino_on(held_port), mocks=mocks, check_ports=True)
    message = str(info.value)
    assert message.startswith("the lab cannot be built here:\n  - ")
    assert (f"services.trino.ports.http.external: port {held_port} on 127.0.0.1 is already in use by "
            f"pid {os.getpid()} ") in message
    assert "lab.published_port_offset: stop what holds them, or move every published port" in message
    # What the offset may be: every published port stays within 65535 (the lab's own highest default is 9464).
    assert f"(now 0; allowed up to {65535 - max(held_port, 48443, 9464)})" in message
    assert mocks.resources == []  # nothing registered, nothing half-deployed


def test_the_stacks_own_container_holding_its_port_is_no_conflict_anothers_is_named(held_port):
    spec = load_platform(lab_with_trino_on(held_port))

    def publishing(network: str):
        return lambda: {held_port: Publisher("book2-trino", (network,))}

    # Only the held port counts as taken: a native platform running beside the tests holds the lab's other defaults.
    only_held = lambda port: port != held_port  # noqa: E731
    assert published_ports.conflicts(spec, "lab", publishing("book2-lab"), only_held) == []  # a second `up`
    other = published_ports.conflicts(spec, "lab", publishing("book2-lab-offline"), only_held)
    assert other[0].startswith(f"services.trino.ports.http.external: port {held_port} on 127.0.0.1 is already in use")
    assert "publishing it for container book2-trino (network book2-lab-offline)" in other[0]
    assert published_ports.conflicts(spec, "lab", lambda: None, is_free=lambda port: True) == []


def test_only_an_engine_on_this_host_publishes_here():
    assert published_ports.engine_is_local({})
    assert published_ports.engine_is_local({"DOCKER_HOST": "unix:///var/run/docker.sock"})
    assert not published_ports.engine_is_local({"DOCKER_HOST": "tcp://10.0.0.5:2376"})


def test_one_setting_moves_every_published_port_and_nothing_else():
    lab = stack_platform("lab")
    moved = stack_platform("lab")
    moved["lab"] = {"published_port_offset": 20000}
    before, after = load_platform(lab), load_platform(moved)
    published = 0
    for name, service in before.enabled_services().items():
        for port_name, port in service.ports.items():
            shifted = after.services[name].ports[port_name]
            assert shifted.internal == port.internal, (name, port_name)  # what services reach each other on
            if port.external is not None:
                assert shifted.external == port.external + 20000, (name, port_name)
                published += 1
    assert published >= 14
    run = run_program("lab", moved)
    assert run.outputs["endpoints"]["trino"]["http"]["external"].endswith(":28080")
    published_on = {p["external"] for c in run.of_type("docker:index/container:Container")
                    for p in c.inputs.get("ports") or []}
    assert 28080 in published_on and 8080 not in published_on


def test_the_offset_is_refused_where_it_would_leave_the_port_range_or_the_lab():
    too_far = stack_platform("lab")
    too_far["lab"] = {"published_port_offset": 60000}
    with pytest.raises(ConfigError) as info:
        load_platform(too_far, source="Pulumi.lab.yaml")
    assert "lakehouse:platform.lab.published_port_offset: 60000 moves services." in str(info.value)
    assert "past 65535" in str(info.value) and "allowed: 0 to " in str(info.value)
    native = stack_platform("native")
    native["lab"] = {"published_port_offset": 100}
    with pytest.raises(ConfigError, match=r"lab\.published_port_offset: moves the lab's published ports; the native"):
        load_platform(native)
