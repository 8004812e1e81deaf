"""The pack's contents: every rule module's ``POLICIES``, in one order, and how to run them.

Each domain lives in ``lakehouse_platform/policies/rules/<domain>.py`` and exports its ``PolicyDef``s; this module only
assembles them. ``lakehouse_platform/policies/__main__.py`` wraps them for Pulumi; the tests call ``run_policy`` and
``validate_all`` on the resources the program registers under Pulumi mocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lakehouse_platform.policies.resources import PolicyDef, Resource, StackContext
from lakehouse_platform.policies.rules import (
    catalog,
    credentials,
    images,
    ownership,
    recovery,
    runtime,
    secrets,
    storage,
)

DOMAINS = (ownership, storage, catalog, images, runtime, secrets, credentials, recovery)
POLICIES: tuple[PolicyDef, ...] = tuple(p for domain in DOMAINS for p in domain.POLICIES)
POLICY_NAMES: tuple[str, ...] = tuple(p.name for p in POLICIES)
LEVELS = ("advisory", "mandatory", "disabled")

if len(set(POLICY_NAMES)) != len(POLICY_NAMES):
    raise RuntimeError(f"two rules share a name: {sorted(n for n in POLICY_NAMES if POLICY_NAMES.count(n) > 1)}")


def policy(name: str) -> PolicyDef:
    """The rule of that name."""
    for p in POLICIES:
        if p.name == name:
            return p
    raise KeyError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")


def run_policy(p: PolicyDef, resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """All violations of one rule over a stack's resources."""
    if p.scope == "stack":
        return list(p.check(resources, context))
    out: list[str] = []
    for r in resources:
        out.extend(p.check(r, context))
    return out


def validate_all(resources: Sequence[Resource], context: StackContext | None,
                 policies: Iterable[PolicyDef] = POLICIES) -> dict[str, list[str]]:
    """policy name -> violations, for every rule."""
    return {p.name: run_policy(p, resources, context) for p in policies}
