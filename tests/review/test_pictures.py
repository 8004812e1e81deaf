"""The pictures are drawn from the model (lakehouse_platform/review/pictures.py): a service, an owner, a connector or
an enforcement point the stack has is in its picture, one it lacks is not; each is SVG a browser can parse; the
docs' overview, targets and governance pages carry them, and the review prints them (``--format svg``)."""

from __future__ import annotations

import contextlib
import io
import xml.etree.ElementTree as ET

import pytest

from lakehouse_platform.config import load_platform, load_stack
from lakehouse_platform.model import Target
from lakehouse_platform.review import grants, pictures
from lakehouse_platform.review import ownership as command
from lakehouse_platform.services.registry import registry
from tests.support import REPO_ROOT
from tests.support.stacks import stack_platform

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> str:
    """Every text of a drawn picture, one per line (parsing it: a malformed SVG fails here)."""
    return "\n".join(t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text"))  # noqa: S314 - our own output


@pytest.mark.parametrize("stack", ["native", "lab", "cloud"])
def test_the_layers_picture_has_each_layers_owner_and_each_service_of_the_stack(stack):
    spec = load_stack(stack)
    drawn = texts(pictures.render(spec, stack, "layers"))
    for layer, contract in spec.layers.items():
        assert layer.value in drawn and f"owner: {contract.owner}" in drawn
    for name in spec.enabled_services():
        assert f"{registry()[name].display_name} {spec.pin_of(name)}" in drawn, name
    services = texts(pictures.render(spec, stack, "services"))
    for name in spec.enabled_services():
        assert pictures.how_it_runs(spec, name).split()[0] in services


def test_the_flows_follow_the_streams_the_stack_declares():
    spec = load_stack("native")
    drawn = texts(pictures.render(spec, "native", "flows"))
    for connector in spec.streams.connectors:
        assert connector.name in drawn
    assert "Debezium bookshop-cdc" in drawn and "topics" in drawn and "checks each identity's grants" in drawn
    assert f"Flink job {spec.flink.job.name}" in drawn and "SeaweedFS" in drawn
    without = stack_platform("native")
    without["services"]["kafka"] = {"enabled": False}
    quiet = texts(pictures.render(load_platform(without), "native", "flows"))
    assert "Debezium" not in quiet and "topics" not in quiet and "order generator" in quiet


def test_the_governance_picture_names_every_enforcement_point_and_what_the_target_trusts():
    native = load_stack("native")
    drawn = " ".join(texts(pictures.render(native, "native", "governance")).split())
    for line in grants.enforced_by(native):
        assert line.split(":", 1)[0] in drawn
    assert "trusts every local process" in drawn
    for identity in native.identities:
        assert identity in drawn
    cloud = load_stack("cloud")
    assert cloud.target is Target.AWS
    assert "trusts every local process" not in texts(pictures.render(cloud, "cloud", "governance"))


def test_the_review_prints_every_picture_as_one_svg():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command.main(["--stack", "native", "--format", "svg"]) == 0
    drawn = texts(out.getvalue())
    assert "the seven layers" in drawn and "where the data flows" in drawn and "who may do what" in drawn


@pytest.mark.parametrize(("page", "marker"), [("index.md", "picture-layers"), ("index.md", "picture-flows"),
                                              ("targets/index.md", "picture-services"),
                                              ("operations/governance.md", "picture-governance")])
def test_the_docs_pages_carry_the_pictures(page, marker):
    assert f"<!-- generated: {marker} -->" in (REPO_ROOT / "docs" / page).read_text()


def test_the_native_outputs_and_review_say_the_target_trusts_every_local_process():
    from lakehouse_platform.outputs import contributed

    native = load_stack("native")
    assert any("trusts every local process" in line for line in contributed(native)["trust"])
    assert any("trusts every local process" in line for line in grants.flags(native))
    assert "trust" not in contributed(load_stack("lab"))
