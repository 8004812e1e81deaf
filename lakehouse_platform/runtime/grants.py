"""The grants rule: whether an identity's grants allow an action on a namespace. One decision, in one place.

Grants map a namespace (or ``*``, every namespace) to the actions an identity may take there. The rule: a
namespace's top level's own entry if it has one, else ``*``'s (a nested namespace ``shop.eu`` follows ``shop``; a
named entry replaces ``*``, so ``"finance": []`` closes finance). Every enforcer decides with it: the model renders
every enforcer's config from it (``lakehouse_platform.model.governance.may``, ``PlatformSpec.access_of``: Trino's
access rules, the store's identities, IAM on aws, the catalogs' own principals), and the catalog gate decides each
request with it (``catalog_requests``).

Runtime code (the standard library only): the operations image and the native processes import it, and so does the
program.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

#: The grant key that means every namespace without an entry of its own.
EVERY_NAMESPACE = "*"


def top_level(namespace: str | Iterable[str]) -> str:
    """The namespace a grant names for ``namespace``: its first level (``shop`` for ``shop.eu`` or ``[shop, eu]``)."""
    if isinstance(namespace, str):
        return namespace.split(".", 1)[0]
    return next(iter(namespace), "")


def held(grants: Mapping[str, Collection[str]], namespace: str | Iterable[str]) -> Collection[str]:
    """The actions ``grants`` allow on ``namespace``: its top level's own entry if it has one, else ``*``'s."""
    listed = grants.get(top_level(namespace))
    return grants.get(EVERY_NAMESPACE, ()) if listed is None else listed


def may(grants: Mapping[str, Collection[str]], action: str, namespace: str | Iterable[str]) -> bool:
    """Whether ``grants`` allow ``action`` on ``namespace`` (``held``)."""
    return action in held(grants, namespace)
