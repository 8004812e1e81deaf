"""What every dynamic provider of the project shares: how it travels in the state, and how it reads its inputs.

The engine runs a dynamic provider in a process of its own, from the blob the state records (``__provider``).
Every provider of the project pickles the standard way: dill, **by reference** to its class in the installed
package (``module:Class``), and the provider process (the stack's venv: ``python -m pulumi.dynamic``) imports
``lakehouse_platform`` by that name (docs/adr/0020). So a class's import path is part of what a stack's state
records: ``tests/test_providers.py`` pins every provider's ``module:Class``, and moving one is a decision.

A recorded blob that is not the program's (a class moved, or a state written by 0.4.0, whose providers carried
their code by value) is a change: the provider's ``diff`` reports ``code_changed`` and its ``update`` records
the new outputs without acting, so the first ``pulumi up`` of a release rewrites what older ones wrote.

This module imports nothing of the project, and Pulumi only inside the functions that need it: what runs in the
provider process stays small.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

Found = TypeVar("Found")

#: Where Pulumi keeps a dynamic resource's serialized provider, among its inputs and outputs.
PROVIDER_KEY = "__provider"


class PlainBlob:
    """Mixed in first by every provider of the project: its blob is a reference to its class, never a secret
    (credentials travel as inputs), so Pulumi need not wrap it as one."""

    serialize_as_secret_always = False


def code_changed(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """True when the state's provider blob (``olds``, the recorded outputs) is not the program's (``news``).

    A provider's ``diff`` reports it as a change, so the state takes the new blob without touching the
    resource; an unknown or missing new blob (a preview, a test calling ``diff`` directly) is no change.
    """
    new = news.get(PROVIDER_KEY)
    return isinstance(new, str) and olds.get(PROVIDER_KEY) != new


def dropped(resource: str, reason: str) -> None:
    """Say that a delete gave up on undoing ``resource`` (its service cannot act) and drops it from the state.

    A destroy completes when a service it deletes through is already down: what cannot be undone there is not
    left to block it, and the operator reads why. On the provider process's stderr, which the engine shows in
    ``pulumi destroy``'s output (the provider process has no engine connection for ``pulumi.log``).
    """
    print(f"warning: {resource}: {reason}; dropped from the state without undoing it", file=sys.stderr, flush=True)


def plain(value: Any, *, drop_none: bool = False) -> Any:
    """A provider's inputs as plain values, compared by value: Pulumi's secret wrappers removed, integral
    floats as ints (protobuf's Struct has only doubles: a port 8080 comes back from the state as 8080.0),
    mappings with string keys (without None values when ``drop_none``), sequences as lists."""
    from pulumi.runtime import rpc  # here, not at the top: the module must load before Pulumi is asked

    if rpc.is_rpc_secret(value):
        return plain(rpc.unwrap_rpc_secret(value), drop_none=drop_none)
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v, drop_none=drop_none) for k, v in value.items() if not (drop_none and v is None)}
    if isinstance(value, (list, tuple)):
        return [plain(v, drop_none=drop_none) for v in value]
    return value


def is_unknown(value: Any) -> bool:
    """True for a value not known yet (a preview) anywhere inside ``value``."""
    from pulumi.output import Unknown

    if isinstance(value, Unknown):
        return True
    if isinstance(value, Mapping):
        return any(is_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(is_unknown(v) for v in value)
    return False


def known(props: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The inputs among ``keys`` that are set and known (a preview's unknowns left out), as plain values."""
    return {k: plain(v, drop_none=True) for k, v in props.items() if k in keys and v is not None and not is_unknown(v)}


def poll(attempt: Callable[[], Found | None], timeout_s: float, interval_s: float) -> Found | None:
    """``attempt()`` every ``interval_s`` until it returns something (not None), for ``timeout_s`` at most.

    None when the time ran out; an exception of ``attempt`` ends the wait at once (a failure, not a
    "not yet"). What a provider waits for (a connector RUNNING, a job stopped, a task STOPPED).
    """
    import tenacity

    retrying: tenacity.Retrying = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout_s), wait=tenacity.wait_fixed(interval_s),
        retry=tenacity.retry_if_result(lambda found: found is None), retry_error_callback=lambda _state: None)
    return retrying(attempt)
