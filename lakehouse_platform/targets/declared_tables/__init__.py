"""``DeclaredTable``: a Pulumi dynamic resource that creates or evolves one declared table (tables as code).

The deployment step behind ``spec.tables``: after the default catalog is healthy, each declared
table is made to match its declaration through that catalog (``lakehouse_platform/runtime/tables.py``,
PyIceberg). It is idempotent, and it never drops anything:

create
    Create the namespace and the table, or adopt a table that already exists and evolve it to the
    declaration (a platform redeployed onto an old catalog keeps its tables and data).
update
    Evolve: new columns, allowed promotions, partition spec evolution, properties (owner, freshness
    promise, maintenance). An evolution Iceberg cannot make in place fails the update with a
    message naming the column; nothing is committed. ``diff`` also compares the live table with its
    declaration, so a table changed by hand (its owner property, a column) is put back by the next
    ``pulumi up``; a declared table missing from the catalog is not re-created (see ``drift``).
delete
    The declaration goes, the table stays: removing a table from the stack config (or destroying
    the stack) never drops a table or its data. Drop it with an engine if you mean it.
refresh (read)
    Reports what the table is now (schema id, spec id, columns, owner property).
A changed namespace or name is a different table: the new one is created, the old one is kept.

Serialization: like every provider of the project, by reference to its class (``lakehouse_platform.providers``);
it runs ``lakehouse_platform/runtime/tables.py`` (the evolution logic the operations share). The program's side
(``declare_tables``: one resource per declared table) lives here, apart from the provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pulumi

from lakehouse_platform.targets.declared_tables.provider import (
    DeclaredTable,
    DeclaredTableError,
    DeclaredTableProvider,
    apply,
    drift,
    load_catalog,
)

if TYPE_CHECKING:
    from lakehouse_platform.layers import LayerComponent

__all__ = ["DeclaredTable", "DeclaredTableError", "DeclaredTableProvider", "apply", "catalog_input", "declare_tables",
           "drift", "load_catalog"]


def catalog_input(spec: Any, secrets: Mapping[str, pulumi.Output[str]]) -> pulumi.Output[dict[str, str]]:
    """The default catalog's PyIceberg properties as the deploying host reaches it, as the platform's identity
    (the gate's token where the catalog is gated) with the platform's store keys: a secret."""
    from lakehouse_platform.placeholders import secret
    from lakehouse_platform.services import profiles
    from lakehouse_platform.services.context import Side
    from lakehouse_platform.services.secrets import render_inputs

    props: dict[str, str] = {**profiles.pyiceberg(spec, Side.EXTERNAL),
                             **profiles.client_secrets(spec, spec.platform_identity)}
    if "s3.endpoint" in props:
        props.update({"s3.access-key-id": secret("s3-access-key"), "s3.secret-access-key": secret("s3-secret-key")})
    return pulumi.Output.secret(pulumi.Output.from_input(render_inputs(props, secrets)))


def declare_tables(spec: Any, secrets: Mapping[str, pulumi.Output[str]], parent: LayerComponent,
                   depends_on: Sequence[pulumi.Resource]) -> dict[str, DeclaredTable]:
    """One ``DeclaredTable`` per ``spec.tables`` entry, after the catalog (and what it depends on) is up."""
    from lakehouse_platform.layers import layer_labels
    from lakehouse_platform.model import Layer

    if not spec.tables:
        return {}
    catalog = catalog_input(spec, secrets)
    labels = layer_labels(spec, Layer.ORCHESTRATION)
    declared: dict[str, DeclaredTable] = {}
    previous: list[pulumi.Resource] = []
    for table in spec.tables:
        # One at a time: the catalog serialises commits anyway, and the fixture answers concurrent
        # creations of one namespace with a 500 instead of a 409.
        resource = DeclaredTable(parent.child_name(f"table-{table.identifier}"), table=spec.declaration(table),
                                 catalog=catalog, labels=labels,
                                 opts=pulumi.ResourceOptions(parent=parent, depends_on=[*depends_on, *previous]))
        declared[table.identifier] = resource
        previous = [resource]
    return declared
