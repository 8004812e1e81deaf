"""Where clients reach a catalog: through its gate when one fronts it, else the catalog itself.

These look across services (which service gates which catalog), so they read the registry.
"""

from __future__ import annotations

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.services.context import Side, url
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
    return url(spec, gate, "http", side, role.path) if gate else url(spec, catalog, "http", side, role.path)


def catalog_path(spec: PlatformSpec, catalog: str | None = None) -> tuple[str, ...]:
    """The services a client of a catalog (the stack's default unless named) goes through: the catalog, and its gate
    when one fronts it. What a writer's deployment step waits for, so that on ``destroy`` the writer stops (its
    last commit, a Flink job's final savepoint) before anything on its way to the catalog is deleted."""
    name = catalog or spec.catalog.default
    gate = gate_of(spec, name)
    return (name, gate) if gate else (name,)


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
