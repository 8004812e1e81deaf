"""Dynamic providers serialized by value: the module's source, executed in Pulumi's provider process.

The engine runs a dynamic provider in its own process, which does not have this repository on
``sys.path``; a provider pickled by reference could not be loaded there. Every provider of the
project (``LocalService``, the deployment steps, ``FlinkJob``, ``DeclaredTable``, the certificate,
the ECS task run) therefore pickles as "this file's source, run as a private module, then its
provider class instantiated". The blob references only builtins, is deterministic, and changes
only when the provider's file (or this bootstrap) changes.

A provider module calls ``provider_by_value`` from its ``__reduce__`` (imported there: pickling
happens in the program, never in the provider process, so the module stays self-contained).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Executed in the provider process when the blob is loaded: the module's source runs once per
# distinct source as a private module (dataclasses look their module up in sys.modules while a class
# is built), then CLASS is instantiated as the provider.
BOOTSTRAP = """
import hashlib, sys, types
_name = PREFIX + hashlib.sha256(SOURCE.encode()).hexdigest()[:16]
_module = sys.modules.get(_name)
if _module is None:
    _module = types.ModuleType(_name)
    _module.__file__ = PATH
    sys.modules[_name] = _module
    try:
        exec(compile(SOURCE, PATH, "exec"), _module.__dict__)
    except BaseException:
        del sys.modules[_name]
        raise
provider = getattr(_module, CLASS)()
"""


def provider_by_value(module_file: str, class_name: str) -> tuple[Any, tuple[Any, ...]]:
    """The ``__reduce__`` value of a provider: ``eval`` of an expression that runs ``BOOTSTRAP``."""
    path = Path(module_file)
    namespace = {"BOOT": BOOTSTRAP, "SOURCE": path.read_text(encoding="utf-8"), "PATH": str(path),
                 "CLASS": class_name, "PREFIX": f"_pulumi_{path.stem}_"}
    expression = f"(lambda ns: (exec(ns['BOOT'], ns), ns['provider'])[1])({namespace!r})"
    return (eval, (expression, {}))
