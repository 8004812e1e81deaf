"""Pulumi's wire forms, as the rules see them: secrets, unknowns, and reading through both.

The engine (and the mocks) hand a resource's inputs over with their wire names and wire forms:

* a secret is the map ``{SIG_KEY: SECRET_SIG, "value": v}`` (the pack keeps that wrapper; see
  ``lakehouse_platform/policies/engine.py``), so a rule can tell a secret from a plain string;
* a value not known during preview is one of the ``UNKNOWN_VALUES`` sentinel strings; rules never
  read an unknown as a violation (it is decided at ``pulumi up``).

``reveal`` reads through secrets (for deciding, never for messages); ``plain_strings`` yields only
what is *not* secret, ``secret_values`` only what is.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

# Pulumi's wire encoding of secrets (sdk/go/common/resource/properties.go).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"  # noqa: S105 - a wire signature, not a credential
# Values not known during preview.
UNKNOWN_VALUES = frozenset({
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # bool
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",  # string
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
    "030794c1-ac77-496b-92df-f27374a8bd58",  # asset
    "e48ece36-62e2-4504-bad9-02848725956a",  # archive
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
})
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

# A dynamic resource's serialized provider (code, not configuration): never scanned.
PROVIDER_KEY = "__provider"


def secret(value: Any) -> dict[str, Any]:
    """``value`` in Pulumi's secret wire form."""
    return {SIG_KEY: SECRET_SIG, "value": value}


def is_unknown(value: Any) -> bool:
    """Whether a value is not known during preview."""
    return isinstance(value, str) and value in UNKNOWN_VALUES


def is_secret(value: Any) -> bool:
    """Whether a value is a secret in Pulumi's wire form."""
    return isinstance(value, Mapping) and value.get(SIG_KEY) == SECRET_SIG


def reveal(value: Any) -> Any:
    """The value with every secret wrapper removed (for reading; never for messages)."""
    if is_secret(value):
        return reveal(value.get("value"))
    if isinstance(value, Mapping):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [reveal(v) for v in value]
    return value


def outer(raw: Any) -> tuple[Any, bool]:
    """``raw`` without a secret wrapper around the whole of it, and whether there was one."""
    whole = is_secret(raw)
    return (reveal(raw) if whole else raw), whole


def known(value: Any) -> bool:
    """A value that is set and known (secret or not)."""
    value = reveal(value)
    return value is not None and not is_unknown(value)


def strings(value: Any) -> Iterator[str]:
    """Every known string inside a value (secrets revealed; a dynamic provider's code skipped)."""
    value = reveal(value)
    if isinstance(value, str):
        if not is_unknown(value):
            yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != PROVIDER_KEY:
                yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def join_path(path: str, key: Any) -> str:
    """``envs[3]``, ``healthcheck.tests``, ``files['/etc/x.json']``: a property path for messages."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = str(key)
    if key.replace("_", "").replace("-", "").isalnum():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def plain_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(property path, string) of every known string that is *not* inside a secret."""
    if is_secret(value) or is_unknown(value):
        return
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != PROVIDER_KEY:
                yield from plain_strings(v, join_path(path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from plain_strings(v, join_path(path, i))


def secret_values(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(property path, revealed value) of every outermost secret inside a value."""
    if is_secret(value):
        yield path, reveal(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != PROVIDER_KEY:
                yield from secret_values(v, join_path(path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from secret_values(v, join_path(path, i))


def truthy(value: Any) -> bool | None:
    """True/False for a known boolean-ish value; None when unknown or unset."""
    value = reveal(value)
    if value is None or is_unknown(value):
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def number(value: Any) -> float | None:
    """A known number (or numeric string); None when unknown, unset or not a number."""
    value = reveal(value)
    if value is None or is_unknown(value) or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
