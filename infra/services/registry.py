"""The registry of the platform's services: one line per service package.

Adding a service is one package in this package (exporting ``SERVICES``, a tuple of
``ServiceDefinition``, and, when it has an aws counterpart, ``AWS_PARTS``) plus one line in
``MODULES``. The order of ``MODULES``, then of each package's ``SERVICES``, is the order defaults
are declared in (the build order itself follows ``depends_on``). Packages are imported when the
registry is first read; their aws halves only by the aws target (``definition.Lazy``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from infra.services.definition import AwsPart, ServiceDefinition
from infra.spec import PlatformSpec, Target

MODULES: tuple[str, ...] = (
    "infra.services.seaweedfs",
    "infra.services.postgres",
    "infra.services.rest_fixture",
    "infra.services.catalog_gate",
    "infra.services.polaris",
    "infra.services.lakekeeper",
    "infra.services.trino",
    "infra.services.spark",
    "infra.services.exporter",
    "infra.services.prometheus",
    "infra.services.flink",
    "infra.services.kafka",
    "infra.services.kafka_connect",
    "infra.services.maintenance_scheduler",
    "infra.services.catalog_backup",
)


class UnknownService(KeyError):
    """A name that is no service of the registry."""


@dataclass(frozen=True)
class Registry:
    """Every service definition, by name, in declaration order."""

    definitions: Mapping[str, ServiceDefinition]
    #: Every package's aws parts (``AWS_PARTS``), in ``MODULES`` order.
    parts: tuple[AwsPart, ...] = ()

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

    def aws_parts(self, spec: PlatformSpec) -> tuple[AwsPart, ...]:
        """The aws parts this spec enables, in registry order except that a part follows those it names ``after``."""
        enabled = {part.name: part for part in self.parts if part.enabled(spec)}
        ordered: dict[str, AwsPart] = {}

        def visit(part: AwsPart) -> None:
            if part.name in ordered:
                return
            for name in part.after:
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
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for definition in module.SERVICES:
            if definition.name in definitions:
                raise ValueError(f"service {definition.name!r} is defined twice ({module_name})")
            definitions[definition.name] = definition
        parts.extend(getattr(module, "AWS_PARTS", ()))
    return Registry(definitions, tuple(parts))
