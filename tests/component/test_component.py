"""``LakehousePlatform`` as a team uses it: several in one program, each its own resources and names; refused before
any resource where two would take the same thing on this host, or where its name and its config's disagree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

from lakehouse_platform.control.isolated import isolated_platform
from tests.support.harness import ProgramRun, RecordingMocks, run_program
from tests.support.stacks import stack_platform

PROGRAM = Path(__file__).parent / "data" / "platforms" / "__main__.py"


def run_platforms(stack: str, platforms: list[tuple[str, dict[str, Any]]], mocks: RecordingMocks | None = None,
                  child_names: dict[str, str] | None = None) -> ProgramRun:
    """The program above with ``platforms`` (name, its ``lakehouse:<name>`` config), in that order."""
    entries = [{"name": name, "key": name, "child_names": (child_names or {}).get(name, "prefixed")}
               for name, _ in platforms]
    config = {"test:platforms": json.dumps(entries), **{f"lakehouse:{name}": json.dumps(body) for name, body in platforms}}
    return run_program(stack, {}, extra_config=config, secret_keys=[], mocks=mocks, program=PROGRAM)


def without_name(platform: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in platform.items() if key != "name"}


def test_two_platforms_on_the_lab_are_distinct_resources_with_distinct_names():
    analytics = without_name(stack_platform("lab"))
    # Its published ports moved out of analytics's way (an offset of 1000 puts its S3 port on analytics's master).
    sandbox = {**without_name(stack_platform("lab")), "lab": {"published_port_offset": 20000},
               "state_dir": "/var/lib/lakehouse-platform/lab-sandbox"}
    run = run_platforms("lab", [("analytics", analytics), ("sandbox", sandbox)])
    urns = [r.urn for r in run.registrations]
    assert len(urns) == len(set(urns)) > 100
    for name in ("analytics", "sandbox"):
        mine = [r for r in run.resources if r.type != "platform:index:LakehousePlatform"
                and r.name.startswith(f"{name}-")]
        assert len(mine) == (len(run.registrations) - 2) // 2, f"{name}: every child's name starts with {name}-"
    physical = [r.inputs["name"] for r in run.resources
                if r.type.startswith("docker:index/") and r.type != "docker:index/remoteImage:RemoteImage"
                and "name" in r.inputs]
    assert len(physical) == len(set(physical)) > 40, "containers, volumes and networks have names of their own"
    assert {r.inputs["name"].split("-", 1)[0] for r in run.of_type("docker:index/container:Container")} == \
        {"analytics", "sandbox"}
    assert set(run.platforms) == {"analytics", "sandbox"}
    assert run.outputs["analytics"]["platform"] == "analytics" and run.outputs["sandbox"]["platform"] == "sandbox"
    published = {name: {port["external"] for ports in run.outputs[name]["endpoints"].values()
                        for port in ports.values() if port.get("external")} for name in ("analytics", "sandbox")}
    assert published["analytics"] and not published["analytics"] & published["sandbox"]


def test_two_native_platforms_on_the_same_ports_are_refused_before_any_resource_naming_the_key():
    mocks = RecordingMocks()
    native = without_name(stack_platform("native"))
    with pytest.raises(pulumi.RunError) as refused:
        run_platforms("native", [("analytics", native), ("sandbox", native)], mocks=mocks)
    message = str(refused.value)
    print(f"\n== refused: {message[:600]}")
    assert "LakehousePlatform 'sandbox' collides with another platform of this program" in message
    assert "services.postgres.ports.pg.internal of sandbox is analytics's services.postgres.ports.pg.internal" \
        in message
    assert "state_dir: sandbox and analytics would both keep their data in" in message
    assert mocks.resources == [], "nothing registered: not even the first platform"


def test_two_native_platforms_on_blocks_of_their_own_are_accepted():
    analytics, _ = isolated_platform("e2e")
    sandbox, _ = isolated_platform("preview")
    run = run_platforms("native", [("analytics", without_name(analytics)), ("sandbox", without_name(sandbox))])
    services = [r for r in run.resources if r.type == "pulumi-python:dynamic/native:LocalService"]
    assert {r.name for r in services} >= {"analytics-postgres", "sandbox-postgres"}
    assert run.outputs["analytics"]["native"]["state_dir"] != run.outputs["sandbox"]["native"]["state_dir"]


def test_a_platform_whose_config_names_it_otherwise_is_refused():
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as refused:
        run_platforms("lab", [("sandbox", stack_platform("lab"))], mocks=mocks)  # the lab's config names it book2
    assert "its config names the platform 'book2' (lakehouse:platform.name), the component 'sandbox'" \
        in str(refused.value)
    assert mocks.resources == []


def test_only_one_platform_keeps_bare_names():
    analytics, _ = isolated_platform("e2e")
    sandbox, _ = isolated_platform("preview")
    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as refused:
        run_platforms("native", [("analytics", without_name(analytics)), ("sandbox", without_name(sandbox))],
                      mocks=mocks, child_names={"analytics": "bare", "sandbox": "bare"})
    assert "child_names='bare' is analytics's already" in str(refused.value)
    assert mocks.resources == []


def test_the_outputs_are_attributes_and_the_component_registers_them():
    run = run_program("native", stack_platform("native"))  # its own run: the platforms it made are read
    platform = run.platforms["lakehouse"]
    assert platform.target == "native" and platform.spec.name == "lakehouse"
    assert set(platform.outputs) == set(run.outputs)  # what __main__.py exports: every output, by its name
    endpoints = run.outputs["endpoints"]
    assert isinstance(platform.endpoints, pulumi.Output) and endpoints["postgres"]["pg"]["internal"]
    assert run.outputs["credentials"]["secret"] is True


def test_a_bad_config_of_the_second_platform_stops_the_first_one_too():
    mocks = RecordingMocks()
    analytics, _ = isolated_platform("e2e")
    with pytest.raises(pulumi.RunError, match=r"lakehouse:platform\.services\.nope: unknown service 'nope'"):
        run_platforms("native", [("analytics", without_name(analytics)),
                                 ("sandbox", {"target": "native", "services": {"nope": {}}})], mocks=mocks)
    assert mocks.resources == [], "the first platform registered nothing either"
