"""Polaris 1.7.0's published contract: its OpenAPI specs, and a check of a request against them.

``contracts/polaris-1.7.0/`` holds the two specs as the tag ``apache-polaris-1.7.0`` publishes them (commit
4ac2f059d1cce149453d0a5f1ff1dff980ec97cc, ``spec/``): the management API (served under
``/api/management/v1``) and the Iceberg REST catalog API Polaris serves (under ``/api/catalog``). PyPI's
``apache-polaris`` carries the same models generated as Python, but it cannot be installed beside this project's
pins (1.7.0 and 1.8.0 require pydantic < 2.14 and boto3 ~= 1.43.1), so the specs themselves are the contract.

``violations(method, path, body)`` says what is wrong with one request: a path or method the API does not
have, or a JSON body its request schema refuses (a ``GrantResource`` is also checked against the schema its
``type`` discriminates to, which JSON Schema alone does not do).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource

CONTRACTS = Path(__file__).parent / "contracts" / "polaris-1.7.0"
MANAGEMENT_SPEC = CONTRACTS / "polaris-management-service.yml"
CATALOG_SPEC = CONTRACTS / "iceberg-rest-catalog-open-api.yaml"


@dataclass(frozen=True)
class Api:
    """One OpenAPI document: its operations by (method, path pattern), and schemas resolved by reference."""

    uri: str
    document: dict[str, Any]
    mount: str  # where Polaris serves it

    @functools.cached_property
    def registry(self) -> Registry:
        return Registry().with_resource(self.uri, Resource.opaque(self.document))

    @functools.cached_property
    def operations(self) -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
        found = []
        for template, item in self.document["paths"].items():
            pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
            for method, operation in item.items():
                if method in ("get", "put", "post", "delete", "head"):
                    found.append((pattern, method.upper(), operation))
        return found

    def validator(self, schema: dict[str, Any]) -> OAS30Validator:
        return OAS30Validator({"$ref": self.uri + schema["$ref"]} if "$ref" in schema else schema,
                              registry=self.registry)

    def schema(self, name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{name}"}


@functools.cache
def apis() -> tuple[Api, Api]:
    return (Api("urn:polaris-management", yaml.safe_load(MANAGEMENT_SPEC.read_text()), "/api/management/v1"),
            Api("urn:polaris-catalog", yaml.safe_load(CATALOG_SPEC.read_text()), "/api/catalog"))


def _errors(api: Api, schema: dict[str, Any], body: Any) -> list[str]:
    try:
        api.validator(schema).validate(body)
    except ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(body)"
        return [f"{where}: {exc.message}"]
    return []


def grant_violations(grant: Any) -> list[str]:
    """A ``GrantResource`` checked against the schema its ``type`` names (the spec's discriminator mapping)."""
    management = apis()[0]
    resource = management.document["components"]["schemas"]["GrantResource"]
    mapping = resource["discriminator"]["mapping"]
    kind = grant.get("type") if isinstance(grant, dict) else None
    if kind not in mapping:
        return [f"grant.type: {kind!r} is not one of {sorted(mapping)}"]
    return _errors(management, {"$ref": mapping[kind]}, grant)


def violations(method: str, path: str, body: Any, media: str = "application/json") -> list[str]:
    """What the published API says is wrong with a request (empty: it is a request the API defines).

    ``body``: the parsed JSON, or a form's fields (``media`` application/x-www-form-urlencoded).
    """
    path = path.split("?", 1)[0]
    for api in apis():
        if not path.startswith(api.mount + "/"):
            continue
        relative = path[len(api.mount):]
        matches = [(m, op) for pattern, m, op in api.operations if pattern.match(relative)]
        operation = next((op for m, op in matches if m == method), None)
        if operation is None:
            allowed = sorted({m for m, _ in matches})
            return [f"{method} {path}: not an operation of the API" + (f" (it has {', '.join(allowed)})"
                                                                       if allowed else "")]
        content = (operation.get("requestBody") or {}).get("content") or {}
        schema = (content.get(media) or {}).get("schema")
        if content and media not in content and body is not None:
            return [f"{method} {path}: the API takes {', '.join(content)}, not {media}"]
        if schema is None or body is None:
            if (operation.get("requestBody") or {}).get("required") and body is None:
                return [f"{method} {path}: the API requires a body"]
            return []
        found = _errors(api, schema, body)
        if not found and isinstance(body, dict) and isinstance(body.get("grant"), dict):
            found = grant_violations(body["grant"])
        return [f"{method} {path}: {e}" for e in found]
    return [f"{method} {path}: under neither {apis()[0].mount} nor {apis()[1].mount}"]
