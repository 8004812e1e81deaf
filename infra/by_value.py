"""Dynamic providers serialized by value, and the helpers every provider compares its inputs with.

The engine runs a dynamic provider in its own process, which does not have this repository on
``sys.path``; a provider pickled by reference could not be loaded there. Every provider of the
project (``LocalService``, the connectors and the CDC source, ``FlinkJob``, ``DeclaredTable``, the
certificate, the ECS task run) therefore pickles as "this module's source and the provider's, each run
as a module of its own, then the provider class instantiated". The blob references only builtins, is
deterministic, and changes only when the provider's file or this one changes.

This module ships beside every provider under its own name (``infra.by_value``), so a provider imports
``plain`` and ``is_unknown`` from here the same way in the program and in the provider process; it must
therefore import nothing of the project. A provider module calls ``provider_by_value`` from its
``__reduce__`` (pickling happens in the program, never in the provider process).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

Found = TypeVar("Found")

# Executed in the provider process when the blob is loaded. The helper module (this file) runs first
# under its own name, its parent package a bare stand-in (the repository is not there); the provider's
# source then runs once per distinct source as a private module (dataclasses look their module up in
# sys.modules while a class is built), and CLASS is instantiated as the provider.
BOOTSTRAP = """
import hashlib, sys, types
def _load(name, source, path):
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module
if HELPER_NAME not in sys.modules:
    _parent = HELPER_NAME.rsplit(".", 1)[0]
    if _parent not in sys.modules:
        sys.modules[_parent] = types.ModuleType(_parent)
        sys.modules[_parent].__path__ = []
    _load(HELPER_NAME, HELPER_SOURCE, HELPER_PATH)
_name = PREFIX + hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
_module = sys.modules.get(_name) or _load(_name, SOURCE, PATH)
provider = getattr(_module, CLASS)()
"""


def provider_by_value(module_file: str, class_name: str) -> tuple[Any, tuple[Any, ...]]:
    """The ``__reduce__`` value of a provider: ``eval`` of an expression that runs ``BOOTSTRAP``."""
    path = Path(module_file)
    helper = Path(__file__)
    namespace = {"BOOT": BOOTSTRAP, "SOURCE": path.read_text(encoding="utf-8"), "PATH": str(path),
                 "CLASS": class_name, "PREFIX": f"_pulumi_{path.stem}_", "HELPER_NAME": __name__,
                 "HELPER_SOURCE": helper.read_text(encoding="utf-8"), "HELPER_PATH": str(helper)}
    expression = f"(lambda ns: (exec(ns['BOOT'], ns), ns['provider'])[1])({namespace!r})"
    return (eval, (expression, {}))


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
