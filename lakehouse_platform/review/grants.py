"""Who may read, write and manage what, per namespace, as the ownership review prints it (governance).

Every answer comes from the one decision (``PlatformSpec.may``); this module only lays it out: a row per
known namespace (and ``*`` for any other), the identities each action is granted to, what a review
should flag (a table owner whose team cannot write the table's namespace, a store that cannot narrow a
grant), and the grants that changed between two stacks.
"""

from __future__ import annotations

from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.model.governance import ACTIONS, EVERY_NAMESPACE
from lakehouse_platform.services.definition import ServiceDefinition
from lakehouse_platform.services.registry import registry

ANY_OTHER = "* (any other)"


def grants_table(spec: PlatformSpec) -> list[dict[str, Any]]:
    """One row per known namespace, then ``*``: namespace -> the identities that may read, write, manage it."""
    rows = []
    for namespace in [*spec.known_namespaces(), EVERY_NAMESPACE]:
        row: dict[str, Any] = {"namespace": ANY_OTHER if namespace == EVERY_NAMESPACE else namespace}
        for action in ACTIONS:
            row[action] = [name for name in spec.identities if spec.may(name, action, namespace)]
        rows.append(row)
    return rows


def flags(spec: PlatformSpec) -> list[str]:
    """What a security review should read twice: owners who cannot write, enforcers that cannot say a grant."""
    found = [f"table {table}: its owner {owner!r} has no identity that may write {namespace} (set "
             f"identities.<name>.team to {owner!r} on one that may)" for table, owner, namespace in
             spec.owners_without_writer()]
    for definition in _enforcers(spec):
        assert definition.governance.enforces_grants is not None
        if definition.governance.enforces_grants.gaps is not None:
            found += definition.governance.enforces_grants.gaps(spec)
    return found


def enforced_by(spec: PlatformSpec) -> list[str]:
    """Where this stack's grants are enforced, in one line each (the governance page says how)."""
    where = []
    for definition in _enforcers(spec):
        assert definition.governance.enforces_grants is not None
        where.append(f"{definition.display_name}: {definition.governance.enforces_grants.what}")
    if spec.target is Target.AWS:
        where.append("IAM: each identity's role, per namespace prefix (Deny where a namespace narrows '*')")
    return where


def _enforcers(spec: PlatformSpec) -> list[ServiceDefinition]:
    """The enabled services that enforce the grants (``Governance.enforces_grants``), in registry order."""
    enabled = spec.enabled_services()
    return [d for d in registry() if d.governance.enforces_grants is not None and d.name in enabled]


def grant_changes(left: PlatformSpec, right: PlatformSpec) -> list[dict[str, str]]:
    """Each identity's grant that differs between two stacks, per namespace either knows (and ``*``)."""
    namespaces = [*dict.fromkeys([*left.known_namespaces(), *right.known_namespaces()]), EVERY_NAMESPACE]
    changes = []
    for name in [*dict.fromkeys([*left.identities, *right.identities])]:
        for namespace in namespaces:
            before = _granted(left, name, namespace)
            after = _granted(right, name, namespace)
            if before != after:
                changes.append({"what": f"grants.{name}.{namespace}", "left": before, "right": after})
    return changes


def _granted(spec: PlatformSpec, name: str, namespace: str) -> str:
    if name not in spec.identities:
        return "no such identity"
    return ", ".join(a for a in ACTIONS if spec.may(name, a, namespace)) or "nothing"
