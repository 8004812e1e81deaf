"""Ownership: every resource says which layer it belongs to and who answers for it."""

from __future__ import annotations

from collections.abc import Sequence

from lakehouse_platform.labels import (
    LABEL_LAYER,
    LABEL_OWNER,
    LABEL_PLATFORM,
    LABEL_SERVICE,
    LAYER_NAMES,
)
from lakehouse_platform.policies.resources import (
    PolicyDef,
    Resource,
    StackContext,
    can_carry_labels,
    index_of,
    is_exempt,
    labels_of,
    message,
    no_context,
    platform_of,
    same_value,
    structural_layer,
)


def check_layer_ownership(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """Every resource carries its layer and owner, and the owner is the one the ownership table names.

    Resources whose type takes labels/tags must carry ``lakehouse.layer`` and ``lakehouse.owner``
    (and ``lakehouse.platform``); the layer must be the one of the component the resource was
    built under; the owner must be the one ``lakehouse_platform.labels`` names: the owner of the layer, or the
    owner of a service *of that same layer* when the resource is that service's (an engine may have
    its own team), exactly as ``layer_labels`` labels them. A resource of one layer made for a
    service of another (an IAM task role of polaris lives in governance: governance answers who may
    do what) is its layer's; its ``lakehouse.service`` tag still says which service it serves.
    Types that take no labels (images, bucket sub-resources, role policies) must sit under a layer
    component, from which they take both. AWS tag values drop characters AWS refuses (the aws
    target writes "each engines team"), so owners are compared in that form on aws.
    """
    rule = "layer-ownership"
    index = index_of(resources)
    out: list[str] = []
    if context is None:
        out.append(no_context(rule, "owners against the stack's ownership table"))
    for r in resources:
        if is_exempt(r):
            continue
        built_under = structural_layer(r, index)
        if not can_carry_labels(r):
            if built_under is None:
                out.append(message(r, rule, "takes no labels or tags and sits outside every layer component; "
                                            "create it with parent=<its layer's component> so it inherits "
                                            "the layer and its owner", context, index))
            continue
        labels = labels_of(r)
        word = "tag" if r.type.startswith("aws:") else "label"
        missing = [k for k in (LABEL_LAYER, LABEL_OWNER) if not labels.get(k)]
        if missing:
            out.append(message(r, rule, f"carries no {' and no '.join(missing)} {word}; every resource says which "
                                        "layer it belongs to and who answers for it "
                                        "(lakehouse_platform.layers.base.layer_labels)",
                               context, index))
            continue
        layer, owner, service = labels[LABEL_LAYER], labels[LABEL_OWNER], labels.get(LABEL_SERVICE)
        if layer not in LAYER_NAMES:
            out.append(message(r, rule, f"{word} {LABEL_LAYER}={layer!r} is not a layer; allowed: "
                                        f"{', '.join(LAYER_NAMES)}", context, index))
            continue
        if built_under and built_under != layer:
            out.append(message(r, rule, f"{word} {LABEL_LAYER}={layer!r} but it is built by the {built_under} "
                                        f"layer's component; label it {built_under} or move it", context, index))
        if context is None:
            continue
        expected = context.owner_of(layer, service)
        if expected is not None and not same_value(r, owner, expected):
            whose = context.ownership.whose(layer, service)
            out.append(message(r, rule, f"{word} {LABEL_OWNER}={owner!r} but the ownership table of stack "
                                        f"{context.stack} says {whose} is owned by {expected!r}", context, index))
        # The platform a resource belongs to is the component it sits under (its name is the platform's); a stack
        # deployed without one (0.4.0's program) has its config's.
        platform, expected_platform = labels.get(LABEL_PLATFORM), platform_of(r, index) or context.platform
        if expected_platform and not same_value(r, platform, expected_platform):
            out.append(message(r, rule, f"{word} {LABEL_PLATFORM}={platform!r} but the platform it belongs to is "
                                        f"{expected_platform!r}", context, index))
    return out


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("layer-ownership", "Every resource carries its layer and owner, and the owner is the one the stack's "
              "ownership table names (its layer's, or its service's when the service is of that layer).", "stack",
              check_layer_ownership, needs_context=True),
)
