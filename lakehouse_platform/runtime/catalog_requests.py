"""What a request to an Iceberg REST catalog needs of its caller: an action (read, write, manage) on each namespace it
touches (governance; the catalog gate's policy, ``lakehouse_platform/runtime/catalog_gate.py``).

The gate knows the REST paths of the Iceberg REST spec (without a prefix: the fixture it fronts has none)
and nothing else: a request it does not know is refused, never forwarded. Each known request needs:

========================================================  ==================================================
request                                                   needs
========================================================  ==================================================
``GET /v1/config``                                        an identity (no namespace)
``GET /v1/namespaces``                                    an identity; the answer lists only the namespaces
                                                          it may read (``?parent=p``: read on p)
``POST /v1/namespaces`` (create; the body names it)       manage on the new namespace
``GET|HEAD /v1/namespaces/{ns}``                          read on ns
``DELETE /v1/namespaces/{ns}``, ``POST .../properties``   manage on ns
``GET|HEAD /v1/namespaces/{ns}/tables`` (and ``views``)   read on ns
``POST .../tables`` (create, stage-create), ``register``  manage on ns
``GET|HEAD .../tables/{t}``, ``GET .../credentials``      read on ns
``POST .../tables/{t}/metrics``, ``plan``, ``tasks``,     read on ns (they change nothing)
``GET|DELETE .../plan/{id}``
``POST .../tables/{t}`` (a commit)                        write on ns; manage if it creates the table
                                                          (an ``assert-create`` requirement)
``DELETE .../tables/{t}``                                 manage on ns
``POST .../views`` (create), ``DELETE .../views/{v}``     manage on ns
``POST .../views/{v}`` (replace: a commit)                write on ns
``POST /v1/tables/rename``, ``/v1/views/rename``          manage on the source's and the destination's
``POST /v1/transactions/commit``                          write (manage where it creates) on each table's ns
========================================================  ==================================================

A namespace in a path is its levels joined by the unit separator (``%1F``); a grant names its top level.
Where the namespaces are in the body (create, rename, transactions, a commit's requirements), the gate reads
the body before it decides; a body it cannot read is refused (400), never forwarded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from lakehouse_platform.runtime.grants import may

READ, WRITE, MANAGE = "read", "write", "manage"
#: The namespace level separator in a path parameter (the Iceberg REST spec: ``%1F``).
LEVEL_SEPARATOR = "\x1f"


class BadBody(ValueError):
    """A body the gate must read to decide, and cannot (not JSON, or without the names it needs)."""


@dataclass(frozen=True)
class Need:
    """One action on one namespace (its levels)."""

    action: str
    namespace: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.action} on {'.'.join(self.namespace)}"


@dataclass(frozen=True)
class Route:
    """What the gate knows of a request before its body: what it needs, and whether the body says more."""

    needs: tuple[Need, ...] = ()
    #: Needs read from the body (``None``: the body decides nothing).
    from_body: Callable[[Any], tuple[Need, ...]] | None = field(default=None, compare=False)
    #: The action each need from the body takes at least: a caller holding it on no namespace is refused
    #: before its body is read.
    body_needs: str | None = None
    #: The answer lists namespaces: the gate keeps those the caller may read.
    lists_namespaces: bool = False


def allowed(grants: Mapping[str, Sequence[str]], need: Need) -> bool:
    """Whether an access table (``PlatformSpec.access_of``, rendered into the gate's config) allows ``need``, by
    the one grants rule (``lakehouse_platform.runtime.grants.may``)."""
    return may(grants, need.action, need.namespace)


def holds_anywhere(grants: Mapping[str, Sequence[str]], action: str) -> bool:
    """Whether an access table allows ``action`` on some namespace (the gate's early refusal of a body it need not
    read: a transaction from an identity that may write nowhere)."""
    return any(action in actions for actions in grants.values())


def namespace_of(segment: str) -> tuple[str, ...]:
    """The levels of a namespace path parameter (percent-decoded, split at the unit separator)."""
    return tuple(unquote(segment).split(LEVEL_SEPARATOR))


def route(method: str, path: str, query: Mapping[str, str]) -> Route | None:
    """What a request needs, or None for a request the gate does not know (refused: it cannot check it)."""
    if not path.startswith("/v1/"):
        return None
    parts = path[len("/v1/"):].split("/")
    head, rest = parts[0], parts[1:]
    reading = method in ("GET", "HEAD")
    if head == "config" and not rest and reading:
        return Route()
    if head in ("tables", "views") and rest == ["rename"] and method == "POST":
        return Route(from_body=_rename, body_needs=MANAGE)
    if head == "transactions" and rest == ["commit"] and method == "POST":
        return Route(from_body=_transaction, body_needs=WRITE)
    if head != "namespaces":
        return None
    if not rest:
        if reading:
            parent = query.get("parent")
            needs = (Need(READ, tuple(parent.split(LEVEL_SEPARATOR))),) if parent else ()
            return Route(needs=needs, lists_namespaces=not parent)
        return Route(from_body=_new_namespace, body_needs=MANAGE) if method == "POST" else None
    if not rest[0]:
        return None
    ns, tail = namespace_of(rest[0]), rest[1:]

    def need(action: str) -> Route:
        return Route(needs=(Need(action, ns),))

    if not tail:
        return need(READ) if reading else need(MANAGE) if method == "DELETE" else None
    kind, objects = tail[0], tail[1:]
    if kind == "properties" and not objects and method == "POST":
        return need(MANAGE)
    if kind == "register" and not objects and method == "POST":
        return need(MANAGE)
    if kind not in ("tables", "views"):
        return None
    if not objects:  # the namespace's tables or views
        return need(READ) if reading else need(MANAGE) if method == "POST" else None
    if not objects[0]:
        return None
    if len(objects) == 1:  # one table or view
        if reading:
            return need(READ)
        if method == "DELETE":
            return need(MANAGE)
        if method == "POST":
            return Route(needs=(Need(WRITE, ns),), from_body=_commit(ns)) if kind == "tables" else need(WRITE)
        return None
    if kind != "tables":
        return None
    action, args = objects[1], objects[2:]
    if action in ("metrics", "tasks") and not args and method == "POST":
        return need(READ)
    if action == "credentials" and not args and reading:
        return need(READ)
    if action == "plan" and ((not args and method == "POST") or (len(args) == 1 and method in ("GET", "DELETE"))):
        return need(READ)
    return None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise BadBody(f"the body is not JSON ({exc})") from None


def _levels(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(level, str) and level for level in value):
        raise BadBody(f"{where} is not a namespace (a list of its levels)")
    return tuple(value)


def _new_namespace(body: Any) -> tuple[Need, ...]:
    data = body if isinstance(body, dict) else {}
    return (Need(MANAGE, _levels(data.get("namespace"), "namespace")),)


def _rename(body: Any) -> tuple[Need, ...]:
    data = body if isinstance(body, dict) else {}
    needs = []
    for end in ("source", "destination"):
        identifier = data.get(end)
        namespace = identifier.get("namespace") if isinstance(identifier, dict) else None
        needs.append(Need(MANAGE, _levels(namespace, f"{end}.namespace")))
    return tuple(needs)


def _creates(change: Mapping[str, Any]) -> bool:
    """Whether a commit creates its table (an ``assert-create`` requirement: a create-table transaction)."""
    requirements = change.get("requirements") or []
    if not isinstance(requirements, list):
        raise BadBody("requirements is not a list")
    return any(isinstance(r, dict) and r.get("type") == "assert-create" for r in requirements)


def _commit(namespace: tuple[str, ...]) -> Callable[[Any], tuple[Need, ...]]:
    def needs(body: Any) -> tuple[Need, ...]:
        if not isinstance(body, dict):
            raise BadBody("a commit is a JSON object")
        return (Need(MANAGE, namespace),) if _creates(body) else ()
    return needs


def _transaction(body: Any) -> tuple[Need, ...]:
    changes = body.get("table-changes") if isinstance(body, dict) else None
    if not isinstance(changes, list) or not changes:
        raise BadBody("table-changes is not a list of table changes")
    needs = []
    for index, change in enumerate(changes):
        identifier = change.get("identifier") if isinstance(change, dict) else None
        namespace = identifier.get("namespace") if isinstance(identifier, dict) else None
        levels = _levels(namespace, f"table-changes[{index}].identifier.namespace")
        needs.append(Need(MANAGE if _creates(change) else WRITE, levels))
    return tuple(needs)


def needs_of_body(found: Route, body: bytes) -> tuple[Need, ...]:
    """Every need of a request: its route's, and those its body adds (``BadBody`` if it cannot be read)."""
    if found.from_body is None:
        return found.needs
    return (*found.needs, *found.from_body(_json(body)))


def readable_namespaces(grants: Mapping[str, Sequence[str]], body: bytes) -> bytes | None:
    """A ``ListNamespacesResponse`` keeping only the namespaces ``grants`` allow reading; None if it is not one."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("namespaces"), list):
        return None
    data["namespaces"] = [ns for ns in data["namespaces"]
                          if isinstance(ns, list) and ns and allowed(grants, Need(READ, tuple(map(str, ns))))]
    return json.dumps(data).encode()
