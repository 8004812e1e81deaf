"""A test double of Polaris 1.7.0: its management API and the part of its catalog API clients use, enforcing
privileges the way Polaris does, and checking every request against Polaris's published contract.

Served by the ``serve`` fixture (tests/conftest.py) on 127.0.0.1. What it models, read at tag
apache-polaris-1.7.0:

- the realm's root principal (``bootstrap``), holding the principal role ``service_admin``, which holds every
  catalog's ``catalog_admin`` (CATALOG_MANAGE_ACCESS, CATALOG_MANAGE_METADATA: createCatalog); the management
  API is root's here (a principal the platform makes holds no SERVICE_MANAGE_ACCESS nor CATALOG_MANAGE_ACCESS),
  and ``reset`` is root's alone (PolarisAuthorizerImpl.authorizeOrThrow);
- tokens by OAuth2 client credentials (``/api/catalog/v1/oauth/tokens``), activating ``PRINCIPAL_ROLE:ALL`` or
  one named role; a wrong secret is 401;
- each catalog operation's privileges (RbacOperationSemantics), satisfied by a grant of the privilege or of
  one that subsumes it (``SUPER``, PolarisAuthorizerImpl.SUPER_PRIVILEGES) on the target or any parent
  (hasTransitivePrivilege): 403 ForbiddenException otherwise, and the catalog unchanged;
- commits checked per update (ENABLE_FINE_GRAINED_UPDATE_TABLE_PRIVILEGES, on by default);
- a load with ``X-Iceberg-Access-Delegation`` vends credentials for READ+LIST, plus WRITE when the principal
  holds TABLE_WRITE_DATA on the table (IcebergCatalogHandler.authorizeLoadTable): the double says which
  storage actions in the answer's ``config`` (``storage-actions``), where Polaris puts an STS session scoped
  to them.

Every request's body is checked against the published specs (``tests.support.polaris_contract``); a request
the contract refuses is answered 400 and kept in ``contract_violations``. ``calls`` records who made each
authenticated call, so a test can tell whether root acted outside the catalog job.
"""

from __future__ import annotations

import itertools
import json
import secrets as random
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.support.job_scripts import Answer
from tests.support.polaris_contract import violations

ROOT = "root"
SERVICE_ADMIN = "service_admin"
CATALOG_ADMIN = "catalog_admin"

_CMC, _CMM = "CATALOG_MANAGE_CONTENT", "CATALOG_MANAGE_METADATA"
_TFM, _TWD, _TWP = "TABLE_FULL_METADATA", "TABLE_WRITE_DATA", "TABLE_WRITE_PROPERTIES"
#: desired privilege -> the privileges whose grant satisfies it (PolarisAuthorizerImpl.SUPER_PRIVILEGES, 1.7.0).
SUPER: dict[str, set[str]] = {
    "NAMESPACE_CREATE": {_CMC, _CMM, "NAMESPACE_CREATE", "NAMESPACE_FULL_METADATA"},
    "NAMESPACE_DROP": {_CMC, _CMM, "NAMESPACE_DROP", "NAMESPACE_FULL_METADATA"},
    "NAMESPACE_LIST": {_CMC, _CMM, "NAMESPACE_CREATE", "NAMESPACE_FULL_METADATA", "NAMESPACE_LIST",
                       "NAMESPACE_READ_PROPERTIES", "NAMESPACE_WRITE_PROPERTIES"},
    "NAMESPACE_READ_PROPERTIES": {_CMC, _CMM, "NAMESPACE_FULL_METADATA", "NAMESPACE_READ_PROPERTIES",
                                  "NAMESPACE_WRITE_PROPERTIES"},
    "TABLE_CREATE": {_CMC, _CMM, "TABLE_CREATE", _TFM},
    "TABLE_DROP": {_CMC, _CMM, "TABLE_DROP", _TFM},
    "TABLE_LIST": {_CMC, _CMM, "TABLE_CREATE", _TFM, "TABLE_LIST", "TABLE_READ_DATA", "TABLE_READ_PROPERTIES",
                   _TWD, _TWP},
    "TABLE_READ_PROPERTIES": {_CMC, _CMM, _TFM, "TABLE_READ_DATA", "TABLE_READ_PROPERTIES", _TWD, _TWP},
    "TABLE_WRITE_PROPERTIES": {_CMC, _CMM, _TFM, _TWD, _TWP},
    "TABLE_READ_DATA": {_CMC, "TABLE_READ_DATA", _TWD},
    "TABLE_WRITE_DATA": {_CMC, _TWD},
    "TABLE_ADD_SNAPSHOT": {_CMC, _CMM, _TFM, _TWD, _TWP, "TABLE_ADD_SNAPSHOT"},
    "TABLE_SET_SNAPSHOT_REF": {_CMC, _CMM, _TFM, _TWD, _TWP, "TABLE_SET_SNAPSHOT_REF"},
    "TABLE_SET_PROPERTIES": {_CMC, _CMM, _TFM, _TWD, _TWP, "TABLE_MANAGE_STRUCTURE", "TABLE_SET_PROPERTIES"},
}
#: A commit's update action -> the fine-grained privilege it needs (IcebergCatalogHandler, 1.7.0); others: UPDATE_TABLE.
UPDATE_PRIVILEGE = {"add-snapshot": "TABLE_ADD_SNAPSHOT", "set-snapshot-ref": "TABLE_SET_SNAPSHOT_REF",
                    "set-properties": "TABLE_SET_PROPERTIES"}


def satisfies(granted: str, desired: str) -> bool:
    return granted == desired or granted in SUPER.get(desired, set())


@dataclass
class Principal:
    name: str
    client_id: str
    secret: str
    properties: dict[str, str] = field(default_factory=dict)
    roles: set[str] = field(default_factory=set)  # principal roles


@dataclass
class Call:
    """One authenticated call: who made it, what, and the answer's status."""

    principal: str
    method: str
    path: str
    status: int


class PolarisDouble:
    """Polaris 1.7.0 as its clients and the catalog job see it (``route`` answers one request)."""

    def __init__(self, realm: str = "POLARIS") -> None:
        self.realm = realm
        self.principals: dict[str, Principal] = {}
        self.principal_roles: dict[str, set[tuple[str, str]]] = {SERVICE_ADMIN: set()}  # -> {(catalog, role)}
        self.catalogs: dict[str, dict[str, Any]] = {}
        self.catalog_roles: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (catalog, role) -> grants
        self.namespaces: dict[str, set[tuple[str, ...]]] = {}
        self.tables: dict[str, dict[tuple[tuple[str, ...], str], dict[str, Any]]] = {}
        self.tokens: dict[str, tuple[str, frozenset[str]]] = {}
        self.calls: list[Call] = []
        self.contract_violations: list[str] = []
        self.unavailable = 0  # answer this many token requests with 503 first
        self.failures: dict[tuple[str, str], int] = {}  # (method, path) -> a status to answer instead
        self._ids = itertools.count(1)

    # -- setup --------------------------------------------------------------------------------------------

    def bootstrap(self, secret: str, client_id: str = ROOT) -> None:
        """What the admin tool's ``bootstrap --credential REALM,root,<secret>`` leaves: root, with service_admin."""
        self.principals[ROOT] = Principal(ROOT, client_id, secret, roles={SERVICE_ADMIN})

    # -- what a test asks ---------------------------------------------------------------------------------

    def callers(self) -> set[str]:
        return {c.principal for c in self.calls}

    def grants_of(self, catalog: str, role: str) -> list[dict[str, Any]]:
        return list(self.catalog_roles.get((catalog, role), []))

    # -- the server ---------------------------------------------------------------------------------------

    def __call__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        parsed: Any = None
        media = headers.get("content-type", "application/json").split(";")[0]
        if body and media == "application/json":
            parsed = json.loads(body)
        elif body and media == "application/x-www-form-urlencoded":
            parsed = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        found = violations(method, path, parsed, media)
        if found:
            self.contract_violations += found
            return _error(400, "BadRequestException", "; ".join(found))
        if headers.get("polaris-realm", self.realm) != self.realm:
            return _error(404, "NotFoundException", "unknown realm")
        url = urlsplit(path)
        route = unquote(url.path)
        if (method, route) in self.failures:
            return _error(self.failures[(method, route)], "RuntimeException", "boom: storage rejected")
        if route == "/api/catalog/v1/oauth/tokens":
            return self._token(parse_qs(body.decode()))
        token = headers.get("authorization", "").removeprefix("Bearer ")
        if token not in self.tokens:
            return _error(401, "NotAuthorizedException", "missing or invalid token")
        principal, roles = self.tokens[token]
        answer = self._route(principal, roles, method, route, parse_qs(url.query), parsed, headers)
        self.calls.append(Call(principal, method, route, answer.status))
        return answer

    def _token(self, form: dict[str, list[str]]) -> Answer:
        if self.unavailable:
            self.unavailable -= 1
            return Answer(503, {"message": "no healthy upstream"})
        one = {k: v[0] for k, v in form.items()}
        found = next((p for p in self.principals.values() if p.client_id == one.get("client_id")), None)
        if one.get("grant_type") != "client_credentials" or found is None or found.secret != one.get("client_secret"):
            return Answer(401, {"error": "unauthorized_client", "error_description": "The client is not authorized"})
        scope = one.get("scope", "")
        if scope == "PRINCIPAL_ROLE:ALL":
            roles = frozenset(found.roles)
        elif scope.startswith("PRINCIPAL_ROLE:") and scope.removeprefix("PRINCIPAL_ROLE:") in found.roles:
            roles = frozenset({scope.removeprefix("PRINCIPAL_ROLE:")})
        else:
            return Answer(400, {"error": "invalid_scope", "error_description": f"scope {scope!r}"})
        token = random.token_hex(16)
        self.tokens[token] = (found.name, roles)
        return Answer(200, {"access_token": token, "token_type": "bearer", "expires_in": 3600,
                            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

    # -- privileges -----------------------------------------------------------------------------------------

    def _held(self, roles: frozenset[str], catalog: str) -> list[dict[str, Any]]:
        """Every grant the activated principal roles reach in a catalog (through their catalog roles)."""
        held: list[dict[str, Any]] = []
        for role in roles:
            for cat, catalog_role in self.principal_roles.get(role, set()):
                if cat == catalog:
                    held += self.catalog_roles.get((cat, catalog_role), [])
        return held

    def may(self, roles: frozenset[str], catalog: str, privilege: str, path: tuple[str, ...] = (),
            table: str | None = None) -> bool:
        """Whether a grant on the catalog, a namespace on ``path``'s way, or the table itself satisfies it."""
        for grant in self._held(roles, catalog):
            if not satisfies(grant["privilege"], privilege):
                continue
            where = tuple(grant.get("namespace") or ())
            if grant["type"] == "catalog":
                return True
            if grant["type"] == "namespace" and path[:len(where)] == where:
                return True
            if grant["type"] == "table" and where == path and grant.get("tableName") == table:
                return True
        return False

    # -- routes -------------------------------------------------------------------------------------------

    def _route(self, principal: str, roles: frozenset[str], method: str, route: str,
               query: dict[str, list[str]], body: Any, headers: dict[str, str]) -> Answer:
        if route.startswith("/api/management/v1/"):
            if SERVICE_ADMIN not in roles:
                return _error(403, "ForbiddenException", f"Principal '{principal}' is not authorized for this operation")
            return self._management(method, route.removeprefix("/api/management/v1"), query, body)
        if route.startswith("/api/catalog/v1/"):
            return self._catalog(roles, method, route.removeprefix("/api/catalog/v1"), query, body, headers)
        return _error(404, "NotFoundException", route)

    def _management(self, method: str, route: str, query: dict[str, list[str]], body: Any) -> Answer:
        parts = route.strip("/").split("/")
        match (method, parts):
            case ("POST", ["catalogs"]):
                name = body["catalog"]["name"]
                if name in self.catalogs:
                    return _error(409, "AlreadyExistsException", f"Catalog '{name}' already exists")
                self.catalogs[name] = body["catalog"]
                self.namespaces[name], self.tables[name] = set(), {}
                self.catalog_roles[(name, CATALOG_ADMIN)] = [{"type": "catalog", "privilege": "CATALOG_MANAGE_ACCESS"},
                                                             {"type": "catalog", "privilege": _CMM}]
                self.principal_roles[SERVICE_ADMIN].add((name, CATALOG_ADMIN))
                return Answer(201, body["catalog"])
            case ("GET", ["principals"]):
                return Answer(200, {"principals": [{"name": p.name, "clientId": p.client_id,
                                                    "properties": p.properties} for p in self.principals.values()]})
            case ("POST", ["principals"]):
                name = body["principal"]["name"]
                if name in self.principals:
                    return _error(409, "AlreadyExistsException", f"Principal '{name}' already exists")
                client_id, secret = random.token_hex(8), random.token_hex(16)
                self.principals[name] = Principal(name, client_id, secret, dict(body["principal"].get("properties") or {}))
                return Answer(201, {"principal": {"name": name, "clientId": client_id},
                                    "credentials": {"clientId": client_id, "clientSecret": secret}})
            case ("DELETE", ["principals", name]):
                if name == ROOT:
                    return _error(400, "BadRequestException", "Root principal cannot be dropped")
                return Answer(204) if self.principals.pop(name, None) else _error(404, "NotFoundException", name)
            case ("POST", ["principals", name, "reset"]):
                found = self.principals.get(name)
                if found is None:
                    return _error(404, "NotFoundException", f"Principal '{name}' not found")
                client_id = (body or {}).get("clientId") or found.client_id
                if any(p.client_id == client_id and p.name != name for p in self.principals.values()):
                    return _error(409, "AlreadyExistsException", f"Client ID already in use: {client_id}")
                found.client_id, found.secret = client_id, (body or {}).get("clientSecret") or random.token_hex(16)
                return Answer(200, {"principal": {"name": name, "clientId": client_id},
                                    "credentials": {"clientId": client_id, "clientSecret": found.secret}})
            case ("POST", ["principal-roles"]):
                name = body["principalRole"]["name"]
                if name in self.principal_roles:
                    return _error(409, "AlreadyExistsException", f"PrincipalRole '{name}' already exists")
                self.principal_roles[name] = set()
                return Answer(201, body["principalRole"])
            case ("DELETE", ["principal-roles", name]):
                if self.principal_roles.pop(name, None) is None:
                    return _error(404, "NotFoundException", name)
                for p in self.principals.values():
                    p.roles.discard(name)
                return Answer(204)
            case ("PUT", ["principals", name, "principal-roles"]):
                role = body["principalRole"]["name"]
                if name not in self.principals or role not in self.principal_roles:
                    return _error(404, "NotFoundException", f"{name} or {role}")
                self.principals[name].roles.add(role)
                return Answer(201)
            case ("POST", ["catalogs", catalog, "catalog-roles"]):
                name = body["catalogRole"]["name"]
                if catalog not in self.catalogs:
                    return _error(404, "NotFoundException", catalog)
                if (catalog, name) in self.catalog_roles:
                    return _error(409, "AlreadyExistsException", f"CatalogRole '{name}' already exists")
                self.catalog_roles[(catalog, name)] = []
                return Answer(201, body["catalogRole"])
            case ("DELETE", ["catalogs", catalog, "catalog-roles", name]):
                if self.catalog_roles.pop((catalog, name), None) is None:
                    return _error(404, "NotFoundException", name)
                return Answer(204)
            case ("PUT", ["principal-roles", role, "catalog-roles", catalog]):
                name = body["catalogRole"]["name"]
                if role not in self.principal_roles or (catalog, name) not in self.catalog_roles:
                    return _error(404, "NotFoundException", f"{role} or {name}")
                self.principal_roles[role].add((catalog, name))
                return Answer(201)
            case ("GET", ["catalogs", catalog, "catalog-roles", name, "grants"]):
                if (catalog, name) not in self.catalog_roles:
                    return _error(404, "NotFoundException", name)
                return Answer(200, {"grants": self.grants_of(catalog, name)})
            case ("PUT", ["catalogs", catalog, "catalog-roles", name, "grants"]):
                if (catalog, name) not in self.catalog_roles:
                    return _error(404, "NotFoundException", name)
                grant = body["grant"]
                if grant["type"] == "namespace" and tuple(grant["namespace"]) not in self.namespaces[catalog]:
                    return _error(404, "NotFoundException", f"Namespace {grant['namespace']} not found")
                if grant not in self.catalog_roles[(catalog, name)]:
                    self.catalog_roles[(catalog, name)].append(grant)
                return Answer(201)
            case ("POST", ["catalogs", catalog, "catalog-roles", name, "grants"]):
                if (catalog, name) not in self.catalog_roles:
                    return _error(404, "NotFoundException", name)
                grant = body["grant"]
                self.catalog_roles[(catalog, name)] = [g for g in self.catalog_roles[(catalog, name)] if g != grant]
                return Answer(201)
        return _error(404, "NotFoundException", f"{method} {route}")

    def _catalog(self, roles: frozenset[str], method: str, route: str, query: dict[str, list[str]], body: Any,
                 headers: dict[str, str]) -> Answer:
        parts = route.strip("/").split("/")
        if parts == ["config"]:
            warehouse = (query.get("warehouse") or [""])[0]
            if warehouse not in self.catalogs:
                return _error(404, "NotFoundException", f"Unable to find warehouse {warehouse}")
            return Answer(200, {"defaults": {"prefix": warehouse}, "overrides": {"prefix": warehouse}})
        catalog, rest = parts[0], parts[1:]
        if catalog not in self.catalogs:
            return _error(404, "NotFoundException", f"Unable to find catalog {catalog}")
        namespaces, tables = self.namespaces[catalog], self.tables[catalog]

        def denied(privilege: str, path: tuple[str, ...] = (), table: str | None = None) -> Answer | None:
            if self.may(roles, catalog, privilege, path, table):
                return None
            return _error(403, "ForbiddenException", f"Principal is not authorized for {privilege}")

        match (method, rest):
            case ("GET", ["namespaces"]):
                parent = tuple((query.get("parent") or [""])[0].split("\x1f")) if query.get("parent") else ()
                if refused := denied("NAMESPACE_LIST", parent):
                    return refused
                return Answer(200, {"namespaces": [list(n) for n in sorted(namespaces)
                                                   if len(n) == len(parent) + 1 and n[:len(parent)] == parent]})
            case ("POST", ["namespaces"]):
                namespace = tuple(body["namespace"])
                if refused := denied("NAMESPACE_CREATE", namespace[:-1]):
                    return refused
                if namespace in namespaces:
                    return _error(409, "AlreadyExistsException", f"Namespace already exists: {'.'.join(namespace)}")
                namespaces.add(namespace)
                return Answer(200, {"namespace": list(namespace), "properties": {}})
            case ("GET", ["namespaces", ns]):
                namespace = tuple(ns.split("\x1f"))
                if namespace not in namespaces:
                    return _error(404, "NoSuchNamespaceException", ns)
                return denied("NAMESPACE_READ_PROPERTIES", namespace) or Answer(
                    200, {"namespace": list(namespace), "properties": {}})
            case ("DELETE", ["namespaces", ns]):
                namespace = tuple(ns.split("\x1f"))
                if refused := denied("NAMESPACE_DROP", namespace):
                    return refused
                if any(key[0] == namespace for key in tables):
                    return _error(409, "NamespaceNotEmptyException", ns)
                namespaces.discard(namespace)
                return Answer(204)
            case ("GET", ["namespaces", ns, "tables"]):
                namespace = tuple(ns.split("\x1f"))
                if refused := denied("TABLE_LIST", namespace):
                    return refused
                return Answer(200, {"identifiers": [{"namespace": list(n), "name": t} for n, t in sorted(tables)
                                                    if n == namespace]})
            case ("POST", ["namespaces", ns, "tables"]):
                namespace = tuple(ns.split("\x1f"))
                delegated = bool(headers.get("x-iceberg-access-delegation"))
                for privilege in ("TABLE_CREATE", *(("TABLE_WRITE_DATA",) if delegated else ())):
                    if refused := denied(privilege, namespace):
                        return refused
                if namespace not in namespaces:
                    return _error(404, "NoSuchNamespaceException", ns)
                if (namespace, body["name"]) in tables:
                    return _error(409, "AlreadyExistsException", f"Table already exists: {body['name']}")
                tables[(namespace, body["name"])] = {"properties": dict(body.get("properties") or {}), "snapshots": 0,
                                                     "schema": body["schema"], "uuid": str(uuid.uuid4())}
                return Answer(200, self._load_result(catalog, namespace, body["name"], {"READ", "WRITE", "LIST"}
                                                     if delegated else set()))
            case ("GET", ["namespaces", ns, "tables", name]):
                namespace = tuple(ns.split("\x1f"))
                if (namespace, name) not in tables:
                    refused = denied("TABLE_READ_PROPERTIES", namespace, name)
                    return refused or _error(404, "NoSuchTableException", name)
                actions: set[str] = set()
                if headers.get("x-iceberg-access-delegation"):
                    if self.may(roles, catalog, "TABLE_WRITE_DATA", namespace, name):
                        actions = {"READ", "WRITE", "LIST"}
                    elif refused := denied("TABLE_READ_DATA", namespace, name):
                        return refused
                    else:
                        actions = {"READ", "LIST"}
                elif refused := denied("TABLE_READ_PROPERTIES", namespace, name):
                    return refused
                return Answer(200, self._load_result(catalog, namespace, name, actions))
            case ("POST", ["namespaces", ns, "tables", name]):
                namespace = tuple(ns.split("\x1f"))
                needed = {UPDATE_PRIVILEGE.get(u.get("action"), "TABLE_WRITE_PROPERTIES") for u in body["updates"]}
                for privilege in sorted(needed or {"TABLE_WRITE_PROPERTIES"}):
                    if refused := denied(privilege, namespace, name):
                        return refused
                table = tables.get((namespace, name))
                if table is None:
                    return _error(404, "NoSuchTableException", name)
                for update in body["updates"]:
                    if update.get("action") == "set-properties":
                        table["properties"].update(update["updates"])
                    if update.get("action") == "add-snapshot":
                        table["snapshots"] += 1
                result = self._load_result(catalog, namespace, name, set())
                return Answer(200, {k: result[k] for k in ("metadata-location", "metadata")})
            case ("DELETE", ["namespaces", ns, "tables", name]):
                namespace = tuple(ns.split("\x1f"))
                purge = (query.get("purgeRequested") or ["false"])[0] == "true"
                for privilege in ("TABLE_DROP", *(("TABLE_WRITE_DATA",) if purge else ())):
                    if refused := denied(privilege, namespace, name):
                        return refused
                if tables.pop((namespace, name), None) is None:
                    return _error(404, "NoSuchTableException", name)
                return Answer(204)
            case ("POST", ["tables", "rename"]):
                source, destination = body["source"], body["destination"]
                src, dst = tuple(source["namespace"]), tuple(destination["namespace"])
                for privilege, path, table in (("TABLE_DROP", src, source["name"]), ("TABLE_LIST", dst, None),
                                               ("TABLE_CREATE", dst, None)):
                    if refused := denied(privilege, path, table):
                        return refused
                if (src, source["name"]) not in tables:
                    return _error(404, "NoSuchTableException", source["name"])
                tables[(dst, destination["name"])] = tables.pop((src, source["name"]))
                return Answer(204)
        return _error(404, "NotFoundException", f"{method} {route}")

    def _load_result(self, catalog: str, namespace: tuple[str, ...], name: str, actions: set[str]) -> dict[str, Any]:
        """A ``LoadTableResult``: the table's metadata (format v2, no snapshot) and, for a delegated load, the
        vended credentials' storage actions (where Polaris puts an STS session scoped to them)."""
        table = self.tables[catalog][(namespace, name)]
        location = f"{self.catalogs[catalog]['properties']['default-base-location']}{'/'.join(namespace)}/{name}"
        config = {}
        if actions:
            config = {"s3.access-key-id": f"vended-{next(self._ids)}", "storage-actions": ",".join(sorted(actions)),
                      "storage-location": location}
        schema = table.get("schema") or {"type": "struct", "schema-id": 0,
                                         "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
        metadata = {
            "format-version": 2, "table-uuid": table.get("uuid", "00000000-0000-0000-0000-000000000001"),
            "location": location, "last-sequence-number": 0, "last-updated-ms": 1_700_000_000_000,
            "last-column-id": max((f["id"] for f in schema["fields"]), default=0),
            "schemas": [{**schema, "schema-id": 0}], "current-schema-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}], "default-spec-id": 0, "last-partition-id": 999,
            "properties": table["properties"], "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0, "snapshots": [], "snapshot-log": [], "metadata-log": [], "refs": {},
        }
        return {"metadata-location": f"{location}/metadata/{table['snapshots']:05d}.metadata.json",
                "metadata": metadata, "config": config}


def _error(status: int, kind: str, message: str) -> Answer:
    return Answer(status, {"error": {"message": message, "type": kind, "code": status}})
