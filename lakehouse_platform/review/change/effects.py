"""What a change does while it happens, and what "down" then means for everyone else.

For a resource, the preview's op says it (an update in place, a replacement, a creation, a deletion), and its
type whether it runs (an update restarts it) or holds data (a replacement starts it empty). For a config key
the config alone cannot say what the update will do: a service's settings redeploy that service (a new version
is an upgrade on its data), an annotated key says what it does (``catalog.default``, ``identities``), review
rules deploy nothing, and anything else is said as the preview mode's question.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.review.change.keys import ALL_LAYERS, MISSING, ConfigChange
from lakehouse_platform.review.change.preview import ResourceChange

#: A service's keys that change what it runs: a change is an upgrade (or downgrade) on its data.
VERSION_KEYS = frozenset({"version", "native_version", "aws_version", "image", "bundles", "native_bundles",
                          "aws_bundles"})
#: Keys only the review reads: changing them deploys nothing.
REVIEW_ONLY = ("approvers",)
REVIEW_SECTION = "review"
#: A contract's text, read by the review and the ownership output only.
CONTRACT_TEXT = frozenset({"owns", "change_control", "promise", "down_means"})
NOTHING_DOWN = "nothing is down"


@dataclass(frozen=True)
class Effect:
    """What the change does (``kind``: update in place, restart, upgrade, replace, create, delete, none) and what is
    down meanwhile."""

    kind: str
    does: str
    down: str


def _down(spec: PlatformSpec, layers: frozenset[Layer]) -> str:
    if layers == ALL_LAYERS:
        return "every layer at once: " + spec.layers[Layer.STORAGE].down_means
    return "; ".join(spec.layers[layer].down_means for layer in sorted(layers, key=list(Layer).index))


def config_effect(change: ConfigChange, spec: PlatformSpec) -> Effect:
    """What changing a key does, from the model (``spec`` is the head, or the base for a key the head removes)."""
    path = change.path
    if path[0] == REVIEW_SECTION or path[-1] in REVIEW_ONLY:
        return Effect("none", "review rules only: nothing is deployed differently", NOTHING_DOWN)
    if change.key == "stack":
        return Effect("create", "a new stack: every resource is created", NOTHING_DOWN + " (nothing ran before)")
    down = _down(spec, change.layers)
    if change.service is not None:
        name = change.service
        if path == ("services", name, "enabled") or len(path) == 2:
            added = change.after is True or (change.before is MISSING)
            if added:
                return Effect("create", f"{name} is created and started", NOTHING_DOWN)
            return Effect("delete", f"{name} is stopped and its resources deleted",
                          f"from then on, for {name}'s users: {down}")
        if path[2] in VERSION_KEYS:
            return Effect("upgrade", f"upgrade: {name} restarts on the new version, on its data",
                          f"while {name} restarts: {down}")
        if path[2] == "owner":
            return Effect("update", f"relabel: {name}'s resources carry the new owner (the lab replaces a container "
                                    "whose labels change)", f"where {name} is replaced, while it restarts: {down}")
        return Effect("restart", f"restart: {name} is redeployed with the new settings",
                      f"while {name} restarts: {down}")
    if path[0] == "layers" and len(path) > 2:
        if path[2] in CONTRACT_TEXT:
            return Effect("none", "contract text: the ownership output and review say it; nothing restarts",
                          NOTHING_DOWN)
        return Effect("update", f"relabel: every resource of the {path[1]} layer carries the new owner (the lab "
                                "replaces containers whose labels change)",
                      f"where the layer's services are replaced, while they restart: {down}")
    if change.on_change:
        return Effect("restart", change.on_change, f"while they restart: {down}")
    if change.before is MISSING:
        return Effect("create", "added: created by the next update", NOTHING_DOWN)
    if change.after is MISSING:
        return Effect("delete", "removed: deleted by the next update (the preview shows what goes)",
                      f"for what used it, from then on: {down}")
    if change.layers == ALL_LAYERS:
        return Effect("replace", "platform-wide: resources of every layer may be replaced (the preview shows which)",
                      f"while they are replaced: {down}")
    return Effect("update", "the services that read it are redeployed (the preview shows which, and how)",
                  f"if what reads it restarts: {down}")


def resource_effect(change: ResourceChange, spec: PlatformSpec) -> Effect:
    """What the preview's op does to the resource, and what is down meanwhile."""
    down = _down(spec, change.layers)
    why = f" ({', '.join(change.reasons)})" if change.reasons else ""
    if change.op == "replace":
        if change.holds_data:
            return Effect("replace", f"replace{why}: deleted and created again, EMPTY: its data is lost unless it is "
                                     "kept elsewhere (back it up, or refuse the change)",
                          f"until restored: {down}")
        return Effect("replace", f"replace{why}: deleted and created again", f"until the new one is healthy: {down}")
    if change.op == "delete":
        lost = ", and its data with it" if change.holds_data else ""
        return Effect("delete", f"delete{lost}", f"from then on: {down}")
    if change.op in ("create", "import"):
        return Effect("create", change.op, NOTHING_DOWN)
    if change.runs:
        return Effect("restart", f"update in place{why}: the service restarts (on aws its tasks roll)",
                      f"while it restarts: {down}")
    return Effect("update", f"update in place{why}", NOTHING_DOWN)
