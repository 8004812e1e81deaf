"""Image rules: pinned by tag, digests advised."""

from __future__ import annotations

import copy
import json

from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.wire import reveal
from tests.support.policy_support import graph, lab, named, violations


def test_lab_gets_digest_advice_only_as_advice():
    resources, context = lab()
    advice = violations("image-digest-advised", resources, context)
    assert pack_config.levels_for("lab")["image-digest-advised"] == "advisory"
    assert (
        "docker:RemoteImage 'trino-image' (layer compute, owner analytics engineering) breaks image-digest-advised: "
        "image 'trinodb/trino:483' is pinned by tag only; add its digest (trinodb/trino:483@sha256:...) so a "
        "re-pushed tag cannot change what runs"
    ) in advice
    pinned = copy.deepcopy(resources)
    image = named(pinned, "trino-image")
    image.props["name"] = "trinodb/trino:483@sha256:" + "a" * 64
    assert not any("'trino-image'" in m for m in violations("image-digest-advised", pinned, context))


def test_latest_and_untagged_images_are_refused():
    resources, context = lab()
    named(resources, "trino-image").props["name"] = "trinodb/trino:latest"
    named(resources, "kafka-image").props["name"] = "registry.local:5000/apache/kafka"
    assert sorted(violations("image-pinned", resources, context), reverse=True) == [  # graph order varies
        "docker:RemoteImage 'trino-image' (layer compute, owner analytics engineering) breaks image-pinned: image "
        "'trinodb/trino:latest' uses 'latest', which moves under you; pin an explicit version tag",
        "docker:RemoteImage 'kafka-image' (layer compute, owner streaming) breaks image-pinned: image "
        "'registry.local:5000/apache/kafka' has no tag; pin a version such as registry.local:5000/apache/kafka:1.2.3",
    ]


def test_the_cloud_names_its_own_image_by_digest_and_a_tag_or_the_local_name_is_refused():
    resources, context = graph("cloud")
    assert violations("ecs-own-image-by-digest", resources, context) == []
    assert not any("lakehouse-exporter" in m for m in violations("image-pinned", resources, context))  # a digest pins
    task = named(resources, "lakehouse-maintenance", "aws:ecs/taskDefinition:TaskDefinition")
    definitions = json.loads(reveal(task.props["containerDefinitions"]))
    pushed = definitions[0]["image"]
    repository = pushed.partition("@")[0]
    for image, why in ((f"{repository}:0.3.0-abc", f"runs '{repository}:0.3.0-abc' from an ECR repository by tag; "
                                                    f"name it by the digest the push returned ({repository}@sha256:...)"),
                       ("lakehouse/operations:0.3.0", "runs 'lakehouse/operations:0.3.0', the platform's image under "
                                                      "the name it was built with locally, which no registry serves")):
        definitions[0]["image"] = image
        task.props["containerDefinitions"] = json.dumps(definitions)
        assert violations("ecs-own-image-by-digest", resources, context) == [
            "aws:TaskDefinition 'lakehouse-maintenance' (layer orchestration, owner data engineering) breaks "
            f"ecs-own-image-by-digest: container 'maintenance' {why}"
            + ("; the aws target pushes it and names it by digest" if "locally" in why else " so the task runs what "
               "was pushed")]
    # Upstream images by tag stay the advisory rule's business.
    assert not any("trino" in m for m in violations("ecs-own-image-by-digest", resources, context))
