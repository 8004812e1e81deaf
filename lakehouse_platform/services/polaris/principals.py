"""Polaris's principals: one per identity, with the privileges the identity's grants map to.

Each identity ``<id>`` of the stack is, in Polaris, the principal ``<id>`` (client id ``<id>``, its client
secret the stack secret ``polaris-client-secret-<id>``), holding the principal role ``<id>``, which holds
the catalog role ``<id>`` of the warehouse catalog; that catalog role holds the privileges below. Only the
catalog job (``lakehouse_platform.services.polaris.runtime``) acts as root, to create and converge all of this.

Read against Polaris 1.7.0 (tag apache-polaris-1.7.0):

- the privilege each operation needs: ``RbacOperationSemantics`` (polaris-core .../auth); a privilege is
  satisfied by a grant of it, or of one that subsumes it (``PolarisAuthorizerImpl.SUPER_PRIVILEGES``), on the
  securable or on any parent of it (``hasTransitivePrivilege`` walks the resolved path: catalog, namespace,
  table): a grant on the catalog covers every namespace, a grant on a namespace its tables and children;
- ``TABLE_READ_DATA`` subsumes ``TABLE_READ_PROPERTIES`` and ``TABLE_LIST`` (load a table, with read
  delegation: vended credentials that read); ``TABLE_WRITE_DATA`` subsumes ``TABLE_READ_DATA``,
  ``TABLE_WRITE_PROPERTIES`` (``UPDATE_TABLE``) and each fine-grained commit privilege (``TABLE_ADD_SNAPSHOT``,
  ``TABLE_SET_SNAPSHOT_REF``, ... which 1.7.0 checks by default: ENABLE_FINE_GRAINED_UPDATE_TABLE_PRIVILEGES),
  and is what a load with write delegation needs (vended credentials that write);
- creating a table with write delegation needs ``TABLE_CREATE`` and ``TABLE_WRITE_DATA``, a drop with purge
  ``TABLE_DROP`` and ``TABLE_WRITE_DATA``, a rename ``TABLE_DROP`` on the source and ``TABLE_LIST`` +
  ``TABLE_CREATE`` on the destination namespace;
- listing the top-level namespaces is ``NAMESPACE_LIST`` on the catalog itself (no namespace-level grant
  reaches it), and Polaris lists every namespace it holds, unfiltered.

So Polaris's grants are additive: nothing can take away on one namespace what the catalog grants. Where a
named namespace narrows ``*`` (``{"*": [read, write], "finance": [read]}``), the action is granted on each
namespace that allows it instead of on the catalog, and a namespace nobody declared is closed to it here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.model.governance import EVERY_NAMESPACE

#: The grant key for every namespace.
EVERY = EVERY_NAMESPACE

#: Polaris 1.7.0 privileges each platform action maps to (the management API's CatalogPrivilege and
#: NamespacePrivilege enums hold them all, so each is grantable on the catalog and on a namespace).
PRIVILEGES: dict[str, tuple[str, ...]] = {
    # list the namespace and its tables and views, load them (read delegation: vended credentials that read)
    "read": ("NAMESPACE_LIST", "NAMESPACE_READ_PROPERTIES", "TABLE_LIST", "TABLE_READ_DATA", "VIEW_LIST",
             "VIEW_READ_PROPERTIES"),
    # commit to a table (every update; write delegation: vended credentials that write), replace a view
    "write": ("TABLE_WRITE_DATA", "VIEW_WRITE_PROPERTIES"),
    # create, drop and rename tables and views, create, drop and change the namespace
    "manage": ("NAMESPACE_CREATE", "NAMESPACE_DROP", "NAMESPACE_WRITE_PROPERTIES", "TABLE_CREATE", "TABLE_DROP",
               "VIEW_CREATE", "VIEW_DROP"),
}

#: What lets an identity that reads some namespace list the catalog's namespaces (their names, not their
#: tables): without it no engine can list schemas. Granted on the catalog.
LIST_NAMESPACES = "NAMESPACE_LIST"

#: Grants by identity: identity -> namespace (or ``*``) -> actions among read, write, manage.
Grants = Mapping[str, Mapping[str, Collection[str]]]


@dataclass(frozen=True)
class Principal:
    """One identity as Polaris knows it: its principal, principal role, catalog role and their privileges.

    ``catalog`` holds the privileges granted on the catalog (every namespace), ``namespaces`` those granted
    on one namespace each. The names are the identity's (an identity name is lowercase letters, digits and
    ``-``, so it never meets Polaris's own ``root``, ``service_admin`` or ``catalog_admin``).
    """

    name: str
    catalog: tuple[str, ...]
    namespaces: Mapping[str, tuple[str, ...]]

    @property
    def client_id(self) -> str:
        return self.name

    @property
    def principal_role(self) -> str:
        return self.name

    @property
    def catalog_role(self) -> str:
        return self.name

    def grant_resources(self) -> list[dict[str, object]]:
        """The management API's ``GrantResource``s of its catalog role: catalog grants, then namespace grants."""
        grants: list[dict[str, object]] = [{"type": "catalog", "privilege": p} for p in self.catalog]
        for namespace, privileges in self.namespaces.items():
            grants += [{"type": "namespace", "namespace": namespace.split("."), "privilege": p} for p in privileges]
        return grants


def _privileges(actions: Iterable[str]) -> tuple[str, ...]:
    found = [p for action in ("read", "write", "manage") if action in actions for p in PRIVILEGES[action]]
    return tuple(dict.fromkeys(found))


def principal(name: str, grants: Mapping[str, Collection[str]], namespaces: Iterable[str]) -> Principal:
    """The Polaris principal of one identity from its grants (namespace or ``*`` -> actions).

    An action of ``*`` that no named namespace takes away is granted on the catalog; every other action is
    granted on each known namespace that allows it (a named namespace's list replaces ``*`` there).
    """
    every = set(grants.get(EVERY, ()))
    known = list(dict.fromkeys([*namespaces, *(n for n in grants if n != EVERY)]))
    allowed = {ns: set(grants[ns]) if ns in grants else every for ns in known}
    catalog_wide = {a for a in every if all(a in acts for acts in allowed.values())}
    per_namespace = {ns: _privileges(acts - catalog_wide) for ns, acts in allowed.items()}
    catalog = list(_privileges(catalog_wide))
    if LIST_NAMESPACES not in catalog and any("read" in acts for acts in allowed.values()):
        catalog.append(LIST_NAMESPACES)
    return Principal(name=name, catalog=tuple(catalog),
                     namespaces={ns: privs for ns, privs in per_namespace.items() if privs})


def principals(grants: Grants, namespaces: Iterable[str]) -> list[Principal]:
    """One ``Principal`` per identity, in the grants' order."""
    known = list(namespaces)
    return [principal(name, per_namespace, known) for name, per_namespace in grants.items()]


def stack_grants(spec: PlatformSpec) -> dict[str, dict[str, tuple[str, ...]]]:
    """identity -> namespace (each known one, and ``*``) -> actions: its access table (``PlatformSpec.access_of``,
    the one decision every enforcer is rendered from)."""
    return {name: dict(spec.access_of(name)) for name in spec.identities}


def stack_namespaces(spec: PlatformSpec) -> list[str]:
    """The namespaces the platform knows: the declared tables' and ``governance.namespaces``."""
    return spec.known_namespaces()


def stack_principals(spec: PlatformSpec) -> list[Principal]:
    """Every identity of the stack as a Polaris principal."""
    return principals(stack_grants(spec), stack_namespaces(spec))
