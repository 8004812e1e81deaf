"""Dynamic providers serialized by value, and the helpers every provider compares its inputs with.

The engine runs a dynamic provider in its own process, from the state's serialized blob, wherever the
deployment runs from: another directory, another clone, another release of the project. So every provider
of the project (``LocalService``, the connectors and the CDC source, ``FlinkJob``, ``DeclaredTable``, the
certificate, the ECS task run, the lab's state directory) pickles as **its code, by value**: the sources of
every project module it imports (its *closure*, found by reading the import statements), keyed by module
name, never by a path. In the provider process the blob installs those sources as a private package
``_lakehouse_provider_<digest>`` and instantiates the provider class from it; an ``import lakehouse_platform.x`` inside
them resolves to the blob's own copy (each embedded module gets an ``__import__`` scoped to its blob), so two
releases of one module can be loaded side by side (an upgrade's deletes run the code that made the resource,
its updates the new code). The blob references only builtins, is deterministic, and changes only when a
module of the closure changes: an unchanged provider shows no diff (docs/adr/0015).

This module ships in every blob under its own name (``lakehouse_platform.by_value``); it imports nothing of the project
and only
the standard library at the top. A provider class mixes in ``ByValue`` first, whose ``__reduce__`` is
``provider_by_value(type(self))`` (pickling happens in the program, never in the provider process), and its ``diff``
reports a change when ``code_changed``: the state then records the new code (an update that restarts nothing), so a
later refresh or destroy runs the code of the release that deployed last, not one whose checkout is gone.
"""

from __future__ import annotations

import ast
import concurrent.futures
import functools
import hashlib
import importlib.util
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

Found = TypeVar("Found")

#: The project's top-level package: only its modules are embedded (third-party ones come from the environment).
PROJECT_PACKAGE = "lakehouse_platform"
#: Where Pulumi keeps a dynamic resource's serialized provider, among its inputs and outputs.
PROVIDER_KEY = "__provider"
#: The private package a blob's modules are installed under in the provider process (+ the blob's digest).
ROOT_PREFIX = "_lakehouse_provider_"

# Executed in the provider process when the blob is loaded (names in capitals come from the blob). A finder
# serves the blob's modules under ROOT; each gets builtins whose __import__ maps the project's absolute
# imports ("lakehouse_platform...") into ROOT, so the modules import each other as they do in the program, lazily too.
# Sources are registered with linecache, so tracebacks show their lines and inspect.getsource reads them.
BOOTSTRAP = """
import builtins, importlib, importlib.abc, importlib.util, linecache, sys

class _BlobModules(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    def __init__(self):
        real = builtins.__import__
        def scoped(name, globals=None, locals=None, fromlist=(), level=0):
            if level == 0 and (name == TOP or name.startswith(TOP + ".")):
                module = real(ROOT + "." + name, globals, locals, fromlist, 0)
                return module if fromlist else sys.modules[ROOT + "." + TOP]
            return real(name, globals, locals, fromlist, level)
        self.builtins = dict(builtins.__dict__, __import__=scoped)

    def _name(self, fullname):
        if fullname == ROOT:
            return ""
        if fullname.startswith(ROOT + "."):
            name = fullname[len(ROOT) + 1:]
            if name in SOURCES or name in PACKAGES:
                return name
        return None

    def find_spec(self, fullname, path=None, target=None):
        name = self._name(fullname)
        if name is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=not name or name in PACKAGES)

    def get_source(self, fullname):
        return SOURCES.get(self._name(fullname) or "", "")

    def exec_module(self, module):
        name = self._name(module.__name__)
        module.__dict__["__builtins__"] = self.builtins
        if name not in SOURCES:
            return
        init = "/__init__" if name in PACKAGES else ""
        filename = "<" + ROOT + ">/" + name.replace(".", "/") + init + ".py"
        module.__file__ = filename
        linecache.cache[filename] = (len(SOURCES[name]), None, SOURCES[name].splitlines(True), filename)
        exec(compile(SOURCES[name], filename, "exec"), module.__dict__)

if ROOT not in sys.modules:
    sys.meta_path.insert(0, _BlobModules())
provider = getattr(importlib.import_module(ROOT + "." + MODULE), CLASS)()
"""


class ByValue:
    """Mixed in first by every dynamic provider of the project: it pickles as its code, by value (pickling runs in
    the program only), and that blob is code, never a secret (credentials are inputs)."""

    serialize_as_secret_always = False

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return provider_by_value(type(self))


def provider_by_value(provider_class: type) -> tuple[Any, tuple[Any, ...]]:
    """The ``__reduce__`` value of a provider: ``eval`` of an expression that runs ``BOOTSTRAP`` on its code."""
    module = provider_class.__module__
    # Pickling runs deep in dill's recursion, where CPython 3.11's parser can fail ("AST constructor recursion
    # depth mismatch"): the sources are read on a thread of their own, with a fresh stack (and cached).
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as reader:
        sources = reader.submit(_cached_closure, module).result()
    return reduce_value(module, provider_class.__qualname__, dict(sources))


def reduce_value(module: str, class_name: str, sources: Mapping[str, str]) -> tuple[Any, tuple[Any, ...]]:
    """``provider_by_value`` for given sources (module name -> source), e.g. another release's."""
    sources = dict(sorted(sources.items()))
    packages = sorted(_packages(sources))
    digest = hashlib.sha256(json.dumps([sources, packages], sort_keys=True).encode()).hexdigest()[:16]
    namespace = {"BOOT": BOOTSTRAP, "SOURCES": sources, "PACKAGES": packages, "TOP": PROJECT_PACKAGE,
                 "ROOT": ROOT_PREFIX + digest, "MODULE": module, "CLASS": class_name}
    expression = f"(lambda ns: (exec(ns['BOOT'], ns), ns['provider'])[1])({namespace!r})"
    return (eval, (expression, {}))


def code_changed(olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
    """True when the state's provider code (``olds``, the recorded outputs) is not the program's (``news``).

    A provider's ``diff`` reports it as a change, so the state takes the new code without touching the
    resource; an unknown or missing new blob (a preview, a test calling ``diff`` directly) is no change.
    """
    new = news.get(PROVIDER_KEY)
    return isinstance(new, str) and olds.get(PROVIDER_KEY) != new


def closure(module: str) -> dict[str, str]:
    """The sources of ``module`` and of every project module it imports, recursively, by module name.

    Every ``import`` counts, inside functions too (they run in the provider process), except those under
    ``if TYPE_CHECKING:``; ``lakehouse_platform.by_value`` is always in. A parent package whose ``__init__`` nothing
    imports is not embedded (the blob makes an empty one), so a provider's code is what it imports.
    """
    sources: dict[str, str] = {}
    pending = [module, __name__]
    while pending:
        name = pending.pop()
        if name in sources:
            continue
        source, is_package = _module_source(name)
        sources[name] = source
        pending.extend(sorted(_project_imports(name, source, is_package) - set(sources)))
    return dict(sorted(sources.items()))


@functools.cache
def _cached_closure(module: str) -> tuple[tuple[str, str], ...]:
    return tuple(closure(module).items())


def _packages(sources: Mapping[str, str]) -> set[str]:
    """Every package the blob's modules live in (embedded or not), and the embedded packages themselves."""
    found = {name.rsplit(".", level)[0] for name in sources for level in range(1, name.count(".") + 1)}
    return found | {name for name in sources if _is_package(name)}


def _is_package(name: str) -> bool:
    try:
        return _module_source(name)[1]
    except ImportError:
        return False  # a module this checkout does not have (another release's): a package only as a parent


@functools.cache
def _module_source(name: str) -> tuple[str, bool]:
    """(source, is a package) of a project module, found as the program imports it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ImportError(f"{name}: not a module of the project's source, cannot be embedded in a provider")
    return Path(spec.origin).read_text(encoding="utf-8"), spec.submodule_search_locations is not None


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, AttributeError, ValueError):
        return False  # a name inside a module ("lakehouse_platform.by_value.plain"), not a submodule


def _type_checking_only(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif _type_checking_only(node):
            assert isinstance(node, ast.If)
            for other in node.orelse:
                found += _imports(ast.Module(body=[other], type_ignores=[]))
        else:
            found += _imports(node)
    return found


#: How often ``_parse`` tries before a CPython "recursion depth mismatch" is let through.
PARSE_ATTEMPTS = 3


def _parse(source: str) -> ast.Module:
    """``ast.parse``, tried again when CPython 3.11 raises "AST constructor recursion depth mismatch" for valid
    source (seen while Pulumi serialized providers on worker threads and other threads imported; as we read it,
    3.11's AST code keeps its recursion count per interpreter, not per thread)."""
    for _ in range(PARSE_ATTEMPTS - 1):
        try:
            return ast.parse(source)
        except SystemError as error:
            if "recursion depth mismatch" not in str(error):
                raise
    return ast.parse(source)


def _project_imports(name: str, source: str, is_package: bool) -> set[str]:
    """The project modules ``source`` imports (relative imports resolved against its package)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _imports(_parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{parent}.{base}" if base else parent
        for alias in node.names:
            found.add(f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base)
    return {n for n in found if n == PROJECT_PACKAGE or n.startswith(PROJECT_PACKAGE + ".")}


def dropped(resource: str, reason: str) -> None:
    """Say that a delete gave up on undoing ``resource`` (its service cannot act) and drops it from the state.

    A destroy completes when a service it deletes through is already down: what cannot be undone there is not
    left to block it, and the operator reads why. On the provider process's stderr, which the engine shows in
    ``pulumi destroy``'s output (the provider process has no engine connection for ``pulumi.log``).
    """
    import sys

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
