"""The stack's catalogs as their clients meet them: the default catalog resolved once (its role, the gate in front of
it), and where catalogs lay tables out on storage.

These look across services (which service gates which catalog), so they read the registry.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.services.context import Side, url
from lakehouse_platform.services.definition import CatalogRole
from lakehouse_platform.services.registry import registry


def gate_of(spec: PlatformSpec, catalog: str) -> str | None:
    """The enabled service that gates ``catalog`` (clients reach the catalog through it), or None."""
    for definition in registry():
        if definition.fronts == catalog and definition.name in spec.enabled_services():
            return definition.name
    return None


def catalog_url(spec: PlatformSpec, catalog: str, side: Side) -> str:
    """Where clients reach a catalog's REST API: through its gate when it has one, else the catalog itself."""
    role = registry()[catalog].catalog
    assert role is not None, f"{catalog} is not a catalog"
    gate = gate_of(spec, catalog)
    return url(spec, gate or catalog, "http", side, role.path)


@dataclass(frozen=True)
class DefaultCatalog:
    """The stack's default catalog (``catalog.default``), resolved once: the service, its role as a catalog, and the
    gate its clients reach it through, when one fronts it. Every client of the default catalog reads this."""

    name: str
    role: CatalogRole
    gate: str | None

    @property
    def path(self) -> tuple[str, ...]:
        """The services a client goes through: the catalog, and its gate when one fronts it. What a writer's
        deployment step waits for, so that on ``destroy`` the writer stops (its last commit, a Flink job's final
        savepoint) before anything on its way to the catalog is deleted."""
        return (self.name, self.gate) if self.gate else (self.name,)

    def url(self, spec: PlatformSpec, side: Side) -> str:
        """Where clients reach its REST API: through its gate when it has one, else the catalog itself."""
        return catalog_url(spec, self.name, side)


def default_catalog(spec: PlatformSpec) -> DefaultCatalog:
    """The stack's default catalog, its role and its gate (the model validated that it is an enabled catalog)."""
    name = spec.catalog.default
    role = registry()[name].catalog
    assert role is not None, f"catalog.default: {name} is not a catalog (validated with the spec)"
    return DefaultCatalog(name, role, gate_of(spec, name))


def table_prefixes(spec: PlatformSpec) -> list[str]:
    """Key prefixes of the warehouse bucket under which catalogs lay tables out as ``<namespace>/<table>/``.

    One per enabled catalog that lays its tables out by name (``CatalogRole.tables_location``): the REST
    fixture at the bucket's root, Polaris under ``polaris/``. Lakekeeper lays them out by uuid: a namespace's
    files cannot be named there, so only ``*`` grants reach them.
    """
    prefixes = []
    for name, definition in registry().catalogs().items():
        role = definition.catalog
        if name not in spec.enabled_services() or role is None:
            continue
        location = role.tables_location(spec)
        bucket, _, prefix = (location or "").removeprefix("s3://").partition("/")
        if location and bucket == spec.storage.bucket:
            prefixes.append(prefix)
    return list(dict.fromkeys(prefixes))
