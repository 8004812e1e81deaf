"""layer-ownership: every resource carries its layer and owner, as the ownership table names them."""

from __future__ import annotations

import copy

from lakehouse_platform.config import load_platform
from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.resources import Resource, StackContext, message
from tests.support.policy_support import PROJECT, graph, lab, named, set_label, stack_platform, violations


def test_ownership_refuses_a_resource_without_owner_label():
    resources, context = lab()
    set_label(named(resources, "trino", "docker:index/container:Container"), "lakehouse.owner", None)
    assert violations("layer-ownership", resources, context) == [
        "docker:Container 'trino' (layer compute, owner analytics engineering) breaks layer-ownership: carries no "
        "lakehouse.owner label; every resource says which layer it belongs to and who answers for it "
        "(lakehouse_platform.layers.base.layer_labels)"
    ]


def test_ownership_refuses_an_owner_the_table_does_not_name():
    resources, context = lab()
    set_label(named(resources, "postgres-data"), "lakehouse.owner", "data engineering")
    assert violations("layer-ownership", resources, context) == [
        "docker:Volume 'postgres-data' (layer catalog, owner data engineering) breaks layer-ownership: label "
        "lakehouse.owner='data engineering' but the ownership table of stack lab says service postgres is owned "
        "by 'platform'"
    ]


def test_ownership_follows_a_changed_ownership_table_in_the_stack_config():
    """The stack file hands the catalog to a new owner; resources still labelled with the old one are refused."""
    resources, _ = lab()
    platform = copy.deepcopy(stack_platform("lab"))
    platform.setdefault("layers", {})["catalog"] = {"owner": "catalog team"}
    context = StackContext.from_dict(pack_config.stack_context(load_platform(platform), "lab"))
    found = violations("layer-ownership", resources, context)
    assert (
        "docker:Container 'rest-fixture' (layer catalog, owner platform) breaks layer-ownership: label "
        "lakehouse.owner='platform' but the ownership table of stack lab says service rest-fixture is owned by "
        "'catalog team'"
    ) in found
    catalog = [r for r in resources if "lakehouse.layer" in str(r.props.get("labels")) and "'catalog'" in str(r.props.get("labels"))]
    assert len(found) == len(catalog) > 5


def test_ownership_refuses_a_layer_label_that_contradicts_the_component():
    resources, context = lab()
    set_label(named(resources, "kafka-data"), "lakehouse.layer", "storage")
    assert violations("layer-ownership", resources, context) == [
        "docker:Volume 'kafka-data' (layer storage, owner streaming) breaks layer-ownership: label "
        "lakehouse.layer='storage' but it is built by the compute layer's component; label it compute or move it",
        # kafka is a compute service: a storage resource is storage's, whichever service it names
        "docker:Volume 'kafka-data' (layer storage, owner streaming) breaks layer-ownership: label "
        "lakehouse.owner='streaming' but the ownership table of stack lab says layer storage is owned by 'platform'",
    ]


def test_ownership_refuses_an_unlabelled_resource_outside_every_layer():
    resources, context = lab()
    image = named(resources, "postgres-image")
    image.parent = None
    image.urn = f"urn:pulumi:lab::{PROJECT}::{image.type}::{image.name}"
    assert violations("layer-ownership", resources, context) == [
        "docker:RemoteImage 'postgres-image' (layer unknown, owner unknown) breaks layer-ownership: takes no labels "
        "or tags and sits outside every layer component; create it with parent=<its layer's component> so it "
        "inherits the layer and its owner"
    ]


def test_ownership_says_when_the_table_did_not_reach_the_pack():
    resources, _ = lab()
    assert violations("layer-ownership", resources, None) == [
        "stack (layer unknown, owner unknown) breaks layer-ownership: cannot check owners against the stack's "
        "ownership table: the stack's platform config (lakehouse:platform) did not reach the policy pack; run "
        "`pulumi preview --policy-pack lakehouse_platform/policies` with a Pulumi CLI that passes stack config to policy packs, or "
        "add `--policy-pack-config` rendered by `lakehouse policy-pack --config <stack>`"
    ]


def test_native_graph_refuses_a_service_without_health_or_labels():
    resources, context = graph("native")
    services = [r for r in resources if r.type == "pulumi-python:dynamic/native:LocalService"]
    assert services
    target = services[0]
    target.props.pop("health", None)
    target.props["health"] = {}
    target.props.pop("labels", None)
    found = [m for name in ("service-health-check", "layer-ownership") for m in violations(name, resources, context)]
    assert any(m.startswith(f"native:LocalService '{target.name}'") and "local service has no health check" in m
               for m in found)
    assert any(m.startswith(f"native:LocalService '{target.name}'") and "carries no lakehouse.layer and no "
               "lakehouse.owner label" in m for m in found)


def test_a_governance_resource_made_for_a_catalog_is_governances():
    """The catalog's task role and secrets live in governance: their owner is governance's, not the catalog's."""
    resources, context = graph("cloud")
    governance_owner = context.layer_owners["governance"]
    assert governance_owner == "security, executed by platform"
    served = [r for r in resources if r.props.get("tags", {}).get("lakehouse.layer") == "governance"
              and r.props["tags"].get("lakehouse.service") in ("polaris", "lakekeeper")]
    assert {(r.type, r.props["tags"]["lakehouse.owner"]) for r in served} == {
        ("aws:iam/role:Role", "security executed by platform"),
        ("aws:secretsmanager/secret:Secret", "security executed by platform"),
    }
    # Polaris's task role, root secret and token key; each identity's Polaris client secret (3); the Spark catalog
    # credential (the writer's at Polaris). Lakekeeper is refused (ADR 0013).
    assert len(served) == 7
    role = named(resources, "lakehouse-polaris-task", "aws:iam/role:Role")
    role.props["tags"]["lakehouse.owner"] = "platform"  # the catalog's owner: what the program used to write
    assert violations("layer-ownership", resources, context) == [
        "aws:Role 'lakehouse-polaris-task' (layer governance, owner platform) breaks layer-ownership: tag "
        "lakehouse.owner='platform' but the ownership table of stack cloud says layer governance is owned by "
        "'security, executed by platform'"
    ]


def test_violations_on_unlabelled_resources_name_their_services_owner():
    """Images, role policies and bucket sub-resources take no labels: they are their name's service's."""
    resources, context = lab()
    assert context.layer_owners["compute"] == "each engine's team"
    named(resources, "trino-image").props["name"] = "trinodb/trino:latest"
    assert violations("image-pinned", resources, context) == [
        "docker:RemoteImage 'trino-image' (layer compute, owner analytics engineering) breaks image-pinned: image "
        "'trinodb/trino:latest' uses 'latest', which moves under you; pin an explicit version tag"
    ]
    # A container stripped of every label still names trino's owner, not the compute layer's.
    trino = named(resources, "trino", "docker:index/container:Container")
    trino.props["labels"] = []
    assert violations("layer-ownership", resources, context) == [
        "docker:Container 'trino' (layer compute, owner analytics engineering) breaks layer-ownership: carries no "
        "lakehouse.layer and no lakehouse.owner label; every resource says which layer it belongs to and who answers "
        "for it (lakehouse_platform.layers.base.layer_labels)"
    ]
    # An unlabelled resource of governance named after a catalog is governance's (polaris is of the catalog layer).
    cloud_resources, cloud = graph("cloud")
    policy = named(cloud_resources, "lakehouse-polaris-task-assume-vending", "aws:iam/rolePolicy:RolePolicy")
    assert message(Resource(policy.type, policy.name, policy.props, policy.urn), "x", "y", cloud).startswith(
        "aws:RolePolicy 'lakehouse-polaris-task-assume-vending' (layer governance, owner security, executed by "
        "platform) breaks x")
