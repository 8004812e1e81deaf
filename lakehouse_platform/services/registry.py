"""The registry of the platform's services: one line per service package.

Adding a service is one package in this package (exporting ``SERVICES``, a tuple of
``ServiceDefinition``, and, when it has an aws counterpart, ``AWS_PARTS``; when it registers dynamic resources,
``PROVIDERS``: their type -> their provider's ``module:Class``) plus one line in
``MODULES``. The order of ``MODULES``, then of each package's ``SERVICES``, is the order defaults
are declared in (the build order itself follows ``depends_on``). Packages are imported when the
registry is first read; their aws halves only by the aws target (``definition.Lazy``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.services.capabilities import Capability
from lakehouse_platform.services.definition import AwsPart, IdentitySecret, ServiceDefinition

MODULES: tuple[str, ...] = (
    "lakehouse_platform.services.seaweedfs",
    "lakehouse_platform.services.postgres",
    "lakehouse_platform.services.rest_fixture",
    "lakehouse_platform.services.catalog_gate",
    "lakehouse_platform.services.polaris",
    "lakehouse_platform.services.lakekeeper",
    "lakehouse_platform.services.trino",
    "lakehouse_platform.services.spark",
    "lakehouse_platform.services.exporter",
    "lakehouse_platform.services.prometheus",
    "lakehouse_platform.services.flink",
    "lakehouse_platform.services.kafka",
    "lakehouse_platform.services.kafka_connect",
    "lakehouse_platform.services.maintenance_scheduler",
    "lakehouse_platform.services.catalog_backup",
)


class UnknownService(KeyError):
    """A name that is no service of the registry."""


@dataclass(frozen=True)
class Registry:
    """Every service definition, by name, in declaration order."""

    definitions: Mapping[str, ServiceDefinition]
    #: Every package's aws parts (``AWS_PARTS``), in ``MODULES`` order.
    parts: tuple[AwsPart, ...] = ()
    #: The dynamic resources the packages register -> their providers (``PROVIDERS``: type -> ``module:Class``).
    dynamic_providers: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> ServiceDefinition:
        try:
            return self.definitions[name]
        except KeyError:
            raise UnknownService(f"unknown service {name!r}; known: {', '.join(self.definitions)}") from None

    def __iter__(self) -> Iterator[ServiceDefinition]:
        return iter(self.definitions.values())

    def __contains__(self, name: object) -> bool:
        return name in self.definitions

    def names(self) -> tuple[str, ...]:
        return tuple(self.definitions)

    def defaults(self) -> dict[str, dict]:
        """The default spec of every service (the chapter's lab), as plain config."""
        return {d.name: dict(d.default) for d in self}

    def jobs_of(self) -> dict[str, str]:
        """job or sidecar -> the service whose ``enabled`` it follows."""
        return {d.name: d.job_of for d in self if d.job_of}

    def catalogs(self) -> dict[str, ServiceDefinition]:
        """The services that are catalogs, by name."""
        return {d.name: d for d in self if d.catalog is not None}

    def checks(self) -> tuple:
        """The spec checks service definitions declare (``ServiceDefinition.check``), in declaration order."""
        return tuple(d.check for d in self if d.check is not None)

    def gates(self) -> dict[str, str]:
        """gate service -> the catalog it fronts (clients reach that catalog only through it)."""
        return {d.name: d.fronts for d in self if d.fronts}

    def providers(self, capability: Capability) -> tuple[str, ...]:
        """Every service that offers ``capability`` (``ServiceDefinition.provides``), in declaration order."""
        return tuple(d.name for d in self if capability in d.provides)

    def provider(self, spec: PlatformSpec, capability: Capability) -> str | None:
        """The enabled service that offers ``capability`` in this stack, or None (e.g. no store on aws)."""
        enabled = spec.enabled_services()
        return next((name for name in self.providers(capability) if name in enabled), None)

    def contributed_outputs(self, spec: PlatformSpec) -> dict[str, Any]:
        """The stack outputs the services contribute (``ServiceDefinition.stack_outputs``), merged by key."""
        found: dict[str, Any] = {}
        for definition in self:
            for key, value in (definition.stack_outputs(spec) if definition.stack_outputs else {}).items():
                if isinstance(value, Mapping) and isinstance(found.get(key), Mapping):
                    found[key] = {**found[key], **value}
                else:
                    found[key] = value
        return found

    def databases(self) -> tuple[str, ...]:
        """The databases the services keep on the platform's database (``ServiceDefinition.databases``, a catalog's
        ``CatalogRole.database``), in registry order."""
        found = [name for d in self for name in (
            *((d.catalog.database,) if d.catalog and d.catalog.database else ()), *d.databases)]
        return tuple(dict.fromkeys(found))

    def identity_secrets(self) -> dict[str, tuple[str, IdentitySecret]]:
        """kind -> (the service declaring it, the per-identity secret), for every ``IdentitySecret``."""
        return {item.kind: (d.name, item) for d in self for item in d.identity_secrets}

    def aws_parts(self, spec: PlatformSpec) -> tuple[AwsPart, ...]:
        """The aws parts this spec enables, in registry order except that a part follows those it names ``after``."""
        enabled = {part.name: part for part in self.parts if part.enabled(spec)}
        ordered: dict[str, AwsPart] = {}

        def visit(part: AwsPart) -> None:
            if part.name in ordered:
                return
            for before in part.after:
                for name in self.providers(before) if isinstance(before, Capability) else (before,):
                    if name in enabled:
                        visit(enabled[name])
            ordered[part.name] = part

        for part in enabled.values():
            visit(part)
        return tuple(ordered.values())

    def placement(self) -> dict[str, dict[Target, str]]:
        """service -> {target: why it cannot run there}, for the spec's validation (context)."""
        return {d.name: {t: why for t in Target if (why := d.why_not_on(t)) is not None} for d in self}


@functools.cache
def registry() -> Registry:
    """The registry, built once per process from ``MODULES``."""
    definitions: dict[str, ServiceDefinition] = {}
    parts: list[AwsPart] = []
    providers: dict[str, str] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for definition in module.SERVICES:
            if definition.name in definitions:
                raise ValueError(f"service {definition.name!r} is defined twice ({module_name})")
            definitions[definition.name] = definition
        parts.extend(getattr(module, "AWS_PARTS", ()))
        providers.update(getattr(module, "PROVIDERS", {}))
    found = Registry(definitions, tuple(parts), providers)
    _check(found)
    return found


def _check(found: Registry) -> None:
    """What the definitions promise each other: a capability's provider declares its ports; kinds are unique."""
    kinds: dict[str, str] = {}
    for definition in found:
        for capability in definition.provides:
            ports = definition.default.get("ports") or {}
            missing = [p for p in capability.ports if p not in ports]
            if missing:
                raise ValueError(f"service {definition.name!r} provides {capability.name!r} without the port(s) "
                                 f"{', '.join(missing)} its contract names ({capability.summary})")
        for item in definition.identity_secrets:
            if item.kind in kinds:
                raise ValueError(f"per-identity secret {item.kind!r} is declared by {kinds[item.kind]!r} and "
                                 f"{definition.name!r}; a kind names one service's secret")
            kinds[item.kind] = definition.name


def needed(spec: PlatformSpec, capability: Capability, who: str) -> str:
    """The enabled service that provides ``capability`` to ``who``; a clear error naming what to enable if none does."""
    found = registry().provider(spec, capability)
    if found is None:
        offered = ", ".join(f"services.{name}" for name in registry().providers(capability)) or "no service"
        raise ValueError(f"services.{who} needs {capability.name} ({capability.summary}), which no enabled service "
                         f"of this stack provides; enable one of: {offered}")
    return found
