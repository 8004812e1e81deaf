"""``DeclaredTable``: a Pulumi dynamic resource that creates or evolves one declared table (tables as code).

The deployment step behind ``spec.tables``: after the default catalog is healthy, each declared
table is made to match its declaration through that catalog (``infra/operations/tables.py``,
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

Serialization: like ``LocalService``, the provider ships this module's source by value, and this
module loads ``infra/operations/tables.py`` by path (it imports nothing of the project), so the
engine's provider process needs neither the repository on ``sys.path`` nor ``infra`` importable.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic
import tenacity

from infra.by_value import plain

TABLES_MODULE = Path(__file__).resolve().parents[1] / "operations" / "tables.py"
_spec = importlib.util.spec_from_file_location("_lakehouse_declared_tables_logic", TABLES_MODULE)
assert _spec is not None and _spec.loader is not None
tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tables)

# The fixture answers as soon as its health check passes, but the first requests right after a
# start can still be refused; a few seconds of retries cover it.
CONNECT_ATTEMPTS = 10
CONNECT_WAIT_S = 1.0
SECRET_INPUTS = ["catalog"]


class DeclaredTableError(Exception):
    """A declared table could not be created or evolved; the message is meant for the operator."""


def load_catalog(properties: Mapping[str, Any], attempts: int = CONNECT_ATTEMPTS) -> Any:
    """A PyIceberg REST catalog from plain properties, retried while the catalog is still starting."""
    from pyiceberg.catalog import load_catalog as _load

    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(attempts), wait=tenacity.wait_fixed(CONNECT_WAIT_S),
                                 reraise=True)  # connection refused, 503 while the catalog starts: retried
    try:
        return retrying(_load, "declared-tables", **{str(k): str(v) for k, v in properties.items()})
    except Exception as exc:  # noqa: BLE001 - whatever the last attempt met, said once
        raise DeclaredTableError(f"the catalog at {properties.get('uri')} did not answer: {exc}") from None


def drift(props: Mapping[str, Any]) -> list[str]:
    """How the live table differs from its declaration (changed by hand: a property, a column); [] if it does not.

    Checked once, without retries: a catalog that is down (a preview without the platform running)
    means no drift is claimed. A declared table missing from the catalog is not drift either: it is
    never re-created behind the operator's back (after a catalog loss that would shadow the real
    table on storage; restore or rebuild it, README, Recovery).
    """
    declaration = plain(props.get("table") or {})
    try:
        table = load_catalog(plain(props["catalog"]), attempts=1).load_table(tables.identifier(declaration))
    except Exception:  # noqa: BLE001 - unreachable catalog or missing table: nothing to converge here
        return []
    try:
        return tables.describe_changes(tables.plan_evolution(table, declaration))
    except tables.TableEvolutionError as exc:
        return [str(exc)]  # the update then fails with the same message


def apply(props: Mapping[str, Any]) -> dict[str, Any]:
    """Create or evolve the table; the outputs are the inputs plus what the table is now."""
    declaration = plain(props["table"])
    try:
        result = tables.apply_table(load_catalog(plain(props["catalog"])), declaration)
    except tables.TableEvolutionError as exc:
        raise DeclaredTableError(str(exc)) from None
    return {**props, "identifier": tables.identifier(declaration), "result": result}


class DeclaredTableProvider(pulumi.dynamic.ResourceProvider):
    """Creates or evolves one declared table (contract: module docstring)."""

    serialize_as_secret_always = False  # the blob is this module's source; credentials are inputs

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        from infra.by_value import provider_by_value  # pickling runs in the program only

        return provider_by_value(__file__, type(self).__name__)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = []
        table = news.get("table") or {}
        for key in ("namespace", "name", "owner", "columns"):
            if not table.get(key):
                failures.append(pulumi.dynamic.CheckFailure(f"table.{key}", "required"))
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        outs = apply(props)
        return pulumi.dynamic.CreateResult(outs["identifier"], outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old_table, new_table = plain(olds.get("table") or {}), plain(news.get("table") or {})
        changed = old_table != new_table or plain(olds.get("catalog")) != plain(news.get("catalog"))
        # Checked live as well (like a crashed LocalService), so `pulumi up` puts a table changed by hand back.
        changed = changed or bool(drift(news))
        renamed = (old_table.get("namespace"), old_table.get("name")) != (new_table.get("namespace"),
                                                                          new_table.get("name"))
        return pulumi.dynamic.DiffResult(changes=changed, replaces=["table"] if renamed else [],
                                         delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(apply(news))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        try:
            table = load_catalog(plain(props["catalog"])).load_table(id_)
        except Exception:  # noqa: BLE001 - a catalog that is down or a table dropped by hand: keep the record
            return pulumi.dynamic.ReadResult(id_, props)
        result = {**(props.get("result") or {}), **tables.describe(table), "identifier": id_}
        return pulumi.dynamic.ReadResult(id_, {**props, "result": result})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Forget the declaration; the table and its data stay (see module docstring)."""


class DeclaredTable(pulumi.dynamic.Resource, module="tables", name="DeclaredTable"):
    """One table the stack declares, created or evolved through the default catalog."""

    identifier: pulumi.Output[str]
    result: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, *, table: Mapping[str, Any], catalog: pulumi.Input[Mapping[str, Any]],
                 labels: Mapping[str, str] | None = None, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"table": dict(table), "catalog": catalog, "labels": dict(labels or {}),
                 "identifier": None, "result": None}
        super().__init__(DeclaredTableProvider(), name, props, pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=SECRET_INPUTS)))


def catalog_input(spec: Any, secrets: Mapping[str, pulumi.Output[str]]) -> pulumi.Output[dict[str, str]]:
    """The default catalog's PyIceberg properties as the deploying host reaches it, as the platform's identity
    (the gate's token where the catalog is gated) with the platform's store keys: a secret."""
    from infra.services import profiles
    from infra.services.context import Side
    from infra.services.placeholders import secret
    from infra.services.secrets import render_inputs

    props: dict[str, str] = {**profiles.pyiceberg(spec, Side.EXTERNAL),
                             **profiles.client_secrets(spec, spec.platform_identity)}
    if "s3.endpoint" in props:
        props.update({"s3.access-key-id": secret("s3-access-key"), "s3.secret-access-key": secret("s3-secret-key")})
    return pulumi.Output.secret(pulumi.Output.from_input(render_inputs(props, secrets)))


def declare_tables(spec: Any, secrets: Mapping[str, pulumi.Output[str]], parent: pulumi.Resource,
                   depends_on: Sequence[pulumi.Resource]) -> dict[str, DeclaredTable]:
    """One ``DeclaredTable`` per ``spec.tables`` entry, after the catalog (and what it depends on) is up."""
    from infra.layers import layer_labels
    from infra.spec import Layer

    if not spec.tables:
        return {}
    catalog = catalog_input(spec, secrets)
    labels = layer_labels(spec, Layer.ORCHESTRATION)
    declared: dict[str, DeclaredTable] = {}
    previous: list[pulumi.Resource] = []
    for table in spec.tables:
        # One at a time: the catalog serialises commits anyway, and the fixture answers concurrent
        # creations of one namespace with a 500 instead of a 409.
        resource = DeclaredTable(f"table-{table.identifier}", table=table.model_dump(mode="json"), catalog=catalog,
                                 labels=labels,
                                 opts=pulumi.ResourceOptions(parent=parent, depends_on=[*depends_on, *previous]))
        declared[table.identifier] = resource
        previous = [resource]
    return declared
