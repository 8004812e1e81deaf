"""Who must approve each change, from the layers' ``approvers``, and whether the approvals given satisfy them.

A change needs every approver of every layer it touches; ``owner`` in a layer's approvers is the owner of what
changes (a service's, a declared table's, a resource's, else the layer's). The rules are the base's: a pull
request can add approvers (the head's are required too), never remove one, so a change cannot approve itself.

A change of rights (``rights``: whatever key causes it) is reviewed per identity as well: its actions per namespace
before and after, and besides the governance layer's approvers those of the rights rule (``review.rights``) for its
direction: a widening needs security, a narrowing the team that loses the right.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from lakehouse_platform.model import OWNER_APPROVER, Layer, PlatformSpec
from lakehouse_platform.review.change import EXIT_APPROVALS_MISSING, EXIT_APPROVED, rights
from lakehouse_platform.review.change.effects import Effect, config_effect, resource_effect
from lakehouse_platform.review.change.keys import MISSING, ConfigChange, owners_of, plain
from lakehouse_platform.review.change.preview import ResourceChange


@dataclass(frozen=True)
class ReviewedChange:
    """One change as the review prints it."""

    what: str  # a config key, a resource (``docker:Container '<name>'``), or ``rights of <identity>``
    source: str  # config, resource or rights
    change: str  # "2GiB -> 12GiB", the op, or each namespace's actions before and after; always whole
    layers: tuple[str, ...]
    owners: tuple[str, ...]
    change_control: tuple[str, ...]
    effect: Effect
    approvers: tuple[str, ...]
    missing: tuple[str, ...]
    before: Any = None  # a config key's values as the stack files say them (JSON: whole structures)
    after: Any = None

    def as_dict(self) -> dict[str, Any]:
        out = {"what": self.what, "source": self.source, "change": self.change, "layers": list(self.layers),
               "owners": list(self.owners), "change_control": list(self.change_control),
               "effect": self.effect.kind, "does": self.effect.does, "down_while": self.effect.down,
               "approvers": list(self.approvers), "missing": list(self.missing)}
        if self.source == "config":
            out |= {"before": self.before, "after": self.after}
        return out


@dataclass(frozen=True)
class Review:
    """Every change, the approvals they need, the approvals given, and the verdict."""

    stack: str
    base: str | None  # None: a preview alone (its resources; no config diff)
    head: str
    changes: tuple[ReviewedChange, ...]
    approved_by: tuple[str, ...]
    rights: tuple[rights.RightsChange, ...] = ()  # per identity and namespace, before and after
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
                "changes": [c.as_dict() for c in self.changes],
                "rights": {"direction": rights.direction(self.rights),
                           "identities": [c.as_dict() for c in self.rights],
                           "namespaces": rights.by_namespace(self.rights)},
                "required": list(self.required),
                "approved_by": list(self.approved_by), "missing": list(self.missing), "exit_code": self.exit_code}


def _ordered(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _value(value: Any) -> Any:
    """A value as the stack file says it (None where a side does not have it), for JSON."""
    return None if value is MISSING else plain(value)


def shown(value: Any) -> str:
    """A value whole and readable, never cut: a scalar as is, a list of scalars comma-separated, a structure in
    YAML's flow style (``{access_key: etl, grants: {finance: [read, write]}}``), the way a stack file could say it."""
    if value is MISSING:
        return "(none)"
    value = plain(value)
    if value in ([], {}):
        return "(empty)"
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return ", ".join(map(str, value))
    if isinstance(value, dict | list):
        return str(yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=float("inf"))).strip()
    return str(value)


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
              effect: Effect, specs: list[PlatformSpec], approved: set[str], also: Iterable[str] = (),
              before: Any = None, after: Any = None) -> ReviewedChange:
    ordered = _layers_in_order(layers)
    approvers = list(dict.fromkeys([*approvers_of(ordered, specs, owners), *also]))
    return ReviewedChange(
        what=what, source=source, change=change, layers=tuple(layer.value for layer in ordered),
        owners=_ordered(o for layer in ordered for o in sorted(owners[layer])),
        change_control=tuple(specs[0].layers[layer].change_control for layer in ordered),
        effect=effect, approvers=tuple(approvers), missing=tuple(a for a in approvers if a not in approved),
        before=before, after=after)


def _rights_reviewed(found: list[rights.RightsChange], specs: list[PlatformSpec],
                     approved: set[str]) -> list[ReviewedChange]:
    """One change per identity whose rights change: its actions per namespace before and after, and the approvers
    the governance layer and the rights rule (``review.rights``) name for its direction."""
    out = []
    for identity in dict.fromkeys(c.identity for c in found):
        mine = [c for c in found if c.identity == identity]
        kind = rights.direction(mine) or rights.NARROWING  # ``mine`` is never empty
        gains = "; ".join(f"{c.namespace}: gains {', '.join(c.gained)}" for c in mine if c.gained)
        losses = "; ".join(f"{c.namespace}: loses {', '.join(c.lost)}" for c in mine if c.lost)
        does = f"{kind} of {identity}'s rights: " + "; ".join(x for x in (gains, losses) if x)
        down = ("nothing is down; data becomes reachable to it" if kind == rights.WIDENING else
                f"{identity}'s pipelines are refused where it loses a right (fail closed)")
        owners = {Layer.GOVERNANCE: {rights.team_of(identity, reversed(specs))}}
        out.append(_reviewed(f"rights of {identity}", "rights", rights.summary(mine), [Layer.GOVERNANCE], owners,
                             Effect(kind, does, down), specs, approved, also=rights.approvers(mine, specs)))
    return out


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
        out.append(_reviewed(change.key, "config", f"{shown(change.before)} -> {shown(change.after)}",
                             change.layers, owners, effect, specs, approved, before=_value(change.before),
                             after=_value(change.after)))
    found = rights.rights_changes(base, head) if base is not None else []
    out += _rights_reviewed(found, specs, approved)
    for resource in resources:
        owners = {layer: ({resource.owner} if resource.owner else {s.layers[layer].owner for s in specs})
                  for layer in resource.layers}
        out.append(_reviewed(resource.what, "resource", resource.op, resource.layers, owners,
                             resource_effect(resource, head), specs, approved))
    return Review(stack, base_label, head_label, tuple(out), tuple(sorted(approved)), tuple(found))
