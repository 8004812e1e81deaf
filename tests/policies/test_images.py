"""Image rules: pinned by tag, digests advised."""

from __future__ import annotations

import copy

from policies import config as pack_config
from tests.support.policy_support import lab, named, violations


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
