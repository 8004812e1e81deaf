"""Where clients reach a catalog: through its gate when one fronts it, else the catalog itself.

These look across services (which service gates which catalog), so they read the registry.
"""

from __future__ import annotations

from infra.services.context import Side, url
from infra.services.registry import registry
from infra.spec import PlatformSpec


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
