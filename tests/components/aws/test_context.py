"""The conventions every piece of the aws target follows (lakehouse_platform/components/aws/context.py), under Pulumi mocks: every
taggable resource carries its layer's tags and owner, every resource sits under its layer's component, the explicit
provider carries the region and the platform's default tags."""

from __future__ import annotations

import json

import pytest

from lakehouse_platform.components.aws.common import tag_value
from lakehouse_platform.config import load_platform
from lakehouse_platform.labels import PLATFORM_TYPE
from lakehouse_platform.model import Layer
from tests.support.aws_graph import ALL_RUNS, LAYER_COMPONENTS, accepts_tags, aws_resources, the
from tests.support.harness import ProgramRun
from tests.support.stacks import cloud_platform


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_every_taggable_resource_carries_its_layer_and_owner(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    spec = load_platform(cloud_platform())
    checked = 0
    for resource in aws_resources(run):
        if not accepts_tags(resource.type):
            continue
        tags = resource.inputs.get("tags") or {}
        assert "lakehouse.layer" in tags and "lakehouse.owner" in tags, f"{resource.type} {resource.name} untagged"
        layer = tags["lakehouse.layer"]
        parent = run.layer_of(resource)
        assert parent is not None and layer == LAYER_COMPONENTS[parent], f"{resource.name}: tagged {layer}, under {parent}"
        service = tags.get("lakehouse.service")
        # The owner rule (lakehouse_platform.labels): the layer's owner, unless a service *of that layer* has its own.
        svc = spec.services.get(service) if service else None
        same_layer = svc is not None and svc.layer is Layer(layer)
        expected = spec.owner_of(service) if same_layer else spec.layers[Layer(layer)].owner
        assert tags["lakehouse.owner"] == tag_value(expected), resource.name
        checked += 1
    assert checked > 50
    # The governance layer's task role of a catalog is governance's; its service tag names the catalog.
    role = next(r for r in aws_resources(run) if r.type == "aws:iam/role:Role" and r.name == "lakehouse-polaris-task")
    assert role.inputs["tags"]["lakehouse.owner"] == tag_value(spec.layers[Layer.GOVERNANCE].owner)
    assert role.inputs["tags"]["lakehouse.service"] == "polaris"
    provider = the(run, "pulumi:providers:aws").inputs
    assert provider["region"] == "eu-west-1"
    assert json.loads(provider["defaultTags"])["tags"] == {"lakehouse.platform": "lakehouse",
                                                           "lakehouse.stack": "cloud"}


def test_tag_values_are_what_aws_accepts() -> None:
    assert tag_value("each engine's team") == "each engines team"
    assert tag_value("security, executed by platform") == "security executed by platform"
    assert tag_value("data engineering") == "data engineering"


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_every_resource_has_a_layer_component_parent(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    components = [r for r in run.resources if r.type.startswith("platform:layers:")]
    assert sorted(r.name for r in components) == sorted(LAYER_COMPONENTS)
    (platform,) = [r for r in run.resources if r.type == PLATFORM_TYPE]
    assert {r.parent for r in components} == {platform.name}  # the layers are the platform component's children
    for resource in run.resources:
        if resource in components or resource is platform:
            continue
        # Directly, or through the components that group a service's resources (platform:aws:*).
        assert run.layer_of(resource) in LAYER_COMPONENTS, f"{resource.type} {resource.name}: parent {resource.parent}"
    iam = [r for r in run.resources if r.type.startswith(("aws:iam/", "aws:kms/"))]
    assert iam and all(r.parent == "lakehouse-governance" for r in iam)
