"""What a change does to rights: per identity and namespace the actions before and after, per namespace who gains
or loses read, write or manage, and whether the change widens or narrows them.

Every answer is ``PlatformSpec.may`` on each side (the one decision every enforcement point is rendered from), over
the namespaces either side knows and ``*`` (any other). So a change of rights is seen whatever key causes it: an
identity added or removed, its grants, its store actions (the role its default grants follow), a namespace that
gets an entry of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.model.governance import ACTIONS, EVERY_NAMESPACE, Action
from lakehouse_platform.model.review import IDENTITY_TEAM

WIDENING = "widening"
NARROWING = "narrowing"
#: An identity's team where it names none: the platform runs the identities nobody else answers for.
NO_TEAM = "platform"


@dataclass(frozen=True)
class RightsChange:
    """One identity's actions on one namespace (``*``: any other) before and after; None where it does not exist."""

    identity: str
    namespace: str
    before: tuple[Action, ...] | None
    after: tuple[Action, ...] | None

    @property
    def gained(self) -> tuple[Action, ...]:
        return tuple(a for a in (self.after or ()) if a not in (self.before or ()))

    @property
    def lost(self) -> tuple[Action, ...]:
        return tuple(a for a in (self.before or ()) if a not in (self.after or ()))

    @property
    def direction(self) -> str:
        return WIDENING if self.gained else NARROWING

    def as_dict(self) -> dict[str, Any]:
        return {"identity": self.identity, "namespace": self.namespace,
                "before": None if self.before is None else list(self.before),
                "after": None if self.after is None else list(self.after),
                "gained": list(self.gained), "lost": list(self.lost), "direction": self.direction}


def actions_text(actions: tuple[Action, ...] | None) -> str:
    """``read, write`` / ``nothing`` / ``(no such identity)``."""
    if actions is None:
        return "(no such identity)"
    return ", ".join(actions) or "nothing"


def _actions(spec: PlatformSpec, identity: str, namespace: str) -> tuple[Action, ...] | None:
    if identity not in spec.identities:
        return None
    return tuple(a for a in ACTIONS if spec.may(identity, a, namespace))


def rights_changes(base: PlatformSpec, head: PlatformSpec) -> list[RightsChange]:
    """Each (identity, namespace) whose actions differ, identities and namespaces in the stacks' order, ``*`` last."""
    namespaces = [*dict.fromkeys([*base.known_namespaces(), *head.known_namespaces()]), EVERY_NAMESPACE]
    found = []
    for identity in dict.fromkeys([*base.identities, *head.identities]):
        for namespace in namespaces:
            before, after = _actions(base, identity, namespace), _actions(head, identity, namespace)
            if before != after and (before or after):  # a new identity that may do nothing somewhere changes nothing
                found.append(RightsChange(identity, namespace, before, after))
    return found


def by_namespace(changes: Iterable[RightsChange]) -> dict[str, dict[str, dict[str, list[str]]]]:
    """Per namespace, who gains and who loses each action: ``{ns: {"gains": {read: [ids]}, "loses": {...}}}``."""
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for change in changes:
        entry = out.setdefault(change.namespace, {"gains": {}, "loses": {}})
        for side, actions in (("gains", change.gained), ("loses", change.lost)):
            for action in actions:
                entry[side].setdefault(action, []).append(change.identity)
    return out


def direction(changes: Iterable[RightsChange]) -> str | None:
    """``widening`` if anyone gains anything (a change that also narrows is still a widening), ``narrowing`` if
    rights are only lost, None without a change of rights."""
    found = list(changes)
    if not found:
        return None
    return WIDENING if any(c.gained for c in found) else NARROWING


def team_of(identity: str, specs: Iterable[PlatformSpec]) -> str:
    """The team an identity acts for (the head's word first), else ``NO_TEAM``."""
    for spec in specs:
        found = spec.identities.get(identity)
        if found is not None and found.team:
            return found.team
    return NO_TEAM


def approvers(changes: list[RightsChange], specs: list[PlatformSpec]) -> list[str]:
    """Who the rights rule (``review.rights`` of each side, base first: a change cannot drop its own approver)
    requires for one identity's changes: the widening rule if it gains anything, else the narrowing rule, with
    ``team`` resolved to the identity's team."""
    kind = direction(changes)
    if kind is None:
        return []
    names: list[str] = []
    for spec in specs:
        rule = spec.review.rights.widening if kind == WIDENING else spec.review.rights.narrowing
        for name in rule:
            names += ([team_of(c.identity, reversed(specs)) for c in changes] if name == IDENTITY_TEAM else [name])
    return list(dict.fromkeys(names))


def summary(changes: list[RightsChange]) -> str:
    """One identity's changes as one readable line: ``finance: nothing -> read, write; shop: read -> nothing``."""
    return "; ".join(f"{c.namespace}: {actions_text(c.before)} -> {actions_text(c.after)}" for c in changes)
