"""Which services a deployed stack runs and what each answers for itself: the probes ask here, never list them.

The stack's outputs say what runs (``ownership``: every enabled service, by layer); the registry says what each is
(``ServiceDefinition``): the capabilities it provides, and its probe hooks (``ProbeHooks``: its version, its engine,
its support module). A probe that needs "the store", "the SQL engine" or "every engine" finds it here.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.services.capabilities import Capability
from lakehouse_platform.services.definition import ServiceDefinition
from lakehouse_platform.services.registry import registry


def running(stack: Stack) -> list[str]:
    """Every service the stack runs (its ``ownership`` output), in registry order."""
    found = {name for row in stack.outputs.get("ownership") or [] for name in (row.get("services") or {})}
    found |= set(stack.outputs.get("endpoints") or {})
    return [d.name for d in registry() if d.name in found]


def definitions(stack: Stack) -> list[ServiceDefinition]:
    """The definitions of the services the stack runs, in registry order."""
    return [registry()[name] for name in running(stack)]


def provider(stack: Stack, capability: Capability) -> str | None:
    """The service of the stack that provides ``capability`` (the store, the database, ...), or None."""
    here = set(running(stack))
    return next((name for name in registry().providers(capability) if name in here), None)


def support(capability: Capability, stack: Stack | None = None) -> ModuleType | None:
    """The probes' support module (``ProbeHooks.support``) of the service that provides ``capability``: the stack's
    provider, or without a stack the registry's first."""
    name = provider(stack, capability) if stack is not None else next(iter(registry().providers(capability)), None)
    module = registry()[name].probes.support if name else None
    return importlib.import_module(module) if module else None


def engines(stack: Stack) -> list[Any]:
    """Every engine service of the stack as the cross-engine probes drive it (``ProbeHooks.engine``)."""
    found = []
    for definition in definitions(stack):
        if definition.probes.engine is not None and (engine := definition.probes.engine(stack)) is not None:
            found.append(engine)
    return found


def engine_of(stack: Stack, capability: Capability) -> Any | None:
    """The engine of the service that provides ``capability`` (the SQL engine), or None."""
    name = provider(stack, capability)
    hook = registry()[name].probes.engine if name else None
    return hook(stack) if hook is not None else None


def metrics_url(stack: Stack, capability: Capability) -> str | None:
    """Where the host reaches the metrics of the service that provides ``capability`` (the ``observability`` output,
    under the key its ``ServiceDefinition.metrics`` names), or None."""
    name = provider(stack, capability)
    metrics = registry()[name].metrics if name else None
    return (stack.outputs.get("observability") or {}).get(metrics.key) if metrics else None


def default_catalog(stack: Stack) -> str:
    """The stack's default catalog service (the ``observability`` output names it)."""
    return str((stack.outputs.get("observability") or {}).get("catalog") or next(iter(registry().catalogs())))
