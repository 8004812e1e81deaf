"""Who must approve each change, from the layers' ``approvers``, and whether the approvals given satisfy them.

A change needs every approver of every layer it touches; ``owner`` in a layer's approvers is the owner of what
changes (a service's, a declared table's, a resource's, else the layer's). The rules are the base's: a pull
request can add approvers (the head's are required too), never remove one, so a change cannot approve itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lakehouse_platform.model import OWNER_APPROVER, Layer, PlatformSpec
from lakehouse_platform.review.change import EXIT_APPROVALS_MISSING, EXIT_APPROVED
from lakehouse_platform.review.change.effects import Effect, config_effect, resource_effect
from lakehouse_platform.review.change.keys import MISSING, ConfigChange, owners_of, plain
from lakehouse_platform.review.change.preview import ResourceChange

_SHOWN = 60  # characters of a value shown


@dataclass(frozen=True)
class ReviewedChange:
    """One change as the review prints it."""

    what: str  # a config key, or a resource (``docker:Container '<name>'``)
    source: str  # config or resource
    change: str  # "2GiB -> 12GiB", or the op
    layers: tuple[str, ...]
    owners: tuple[str, ...]
    change_control: tuple[str, ...]
    effect: Effect
    approvers: tuple[str, ...]
    missing: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "source": self.source, "change": self.change, "layers": list(self.layers),
                "owners": list(self.owners), "change_control": list(self.change_control),
                "effect": self.effect.kind, "does": self.effect.does, "down_while": self.effect.down,
                "approvers": list(self.approvers), "missing": list(self.missing)}


@dataclass(frozen=True)
class Review:
    """Every change, the approvals they need, the approvals given, and the verdict."""

    stack: str
    base: str | None  # None: a preview alone (its resources; no config diff)
    head: str
    changes: tuple[ReviewedChange, ...]
    approved_by: tuple[str, ...]
    required: tuple[str, ...] = field(init=False)
    missing: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "required", _ordered(a for c in self.changes for a in c.approvers))
        object.__setattr__(self, "missing", _ordered(a for c in self.changes for a in c.missing))

    @property
    def exit_code(self) -> int:
        return EXIT_APPROVALS_MISSING if self.missing else EXIT_APPROVED

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "base": self.base, "head": self.head,
                "changes": [c.as_dict() for c in self.changes], "required": list(self.required),
                "approved_by": list(self.approved_by), "missing": list(self.missing), "exit_code": self.exit_code}


def _ordered(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _shown(value: Any) -> str:
    if value is MISSING:
        return "(none)"
    value = plain(value)
    text = ", ".join(map(str, value)) if isinstance(value, list) and all(
        not isinstance(v, dict | list) for v in value) else str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"


def _layers_in_order(layers: Iterable[Layer]) -> list[Layer]:
    return sorted(set(layers), key=list(Layer).index)


def approvers_of(layers: Iterable[Layer], specs: Iterable[PlatformSpec], owners: dict[Layer, set[str]]) -> list[str]:
    """Every approver the layers' rules name in each spec (base first), ``owner`` resolved per layer."""
    names: list[str] = []
    for spec in specs:
        for layer in _layers_in_order(layers):
            for approver in spec.layers[layer].approvers:
                names.extend(sorted(owners[layer]) if approver == OWNER_APPROVER else [approver])
    return list(dict.fromkeys(names))


def _reviewed(what: str, source: str, change: str, layers: Iterable[Layer], owners: dict[Layer, set[str]],
              effect: Effect, specs: list[PlatformSpec], approved: set[str]) -> ReviewedChange:
    ordered = _layers_in_order(layers)
    approvers = approvers_of(ordered, specs, owners)
    return ReviewedChange(
        what=what, source=source, change=change, layers=tuple(layer.value for layer in ordered),
        owners=_ordered(o for layer in ordered for o in sorted(owners[layer])),
        change_control=tuple(specs[0].layers[layer].change_control for layer in ordered),
        effect=effect, approvers=tuple(approvers), missing=tuple(a for a in approvers if a not in approved))


def review(stack: str, base_label: str | None, head_label: str, base: PlatformSpec | None, head: PlatformSpec,
           config: list[ConfigChange], resources: list[ResourceChange], approved_by: Iterable[str]) -> Review:
    """The review of a change: each config key and resource with its layers, owners, effect and approvers."""
    approved = {name.strip() for name in approved_by if name.strip()}
    specs = [s for s in (base, head) if s is not None]
    out = []
    for change in config:
        # The side that has the key says what it does (a removed key: the base).
        effect = config_effect(change, base if change.after is MISSING and base is not None else head)
        owners = {layer: set().union(*(owners_of(change, s, layer) for s in specs)) for layer in change.layers}
        out.append(_reviewed(change.key, "config", f"{_shown(change.before)} -> {_shown(change.after)}",
                             change.layers, owners, effect, specs, approved))
    for resource in resources:
        owners = {layer: ({resource.owner} if resource.owner else {s.layers[layer].owner for s in specs})
                  for layer in resource.layers}
        out.append(_reviewed(resource.what, "resource", resource.op, resource.layers, owners,
                             resource_effect(resource, head), specs, approved))
    return Review(stack, base_label, head_label, tuple(out), tuple(sorted(approved)))
