"""The provider and the resource of a declared table (contract: the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic
import tenacity

from lakehouse_platform.providers import PlainBlob, code_changed, plain
from lakehouse_platform.runtime import tables

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


class DeclaredTableProvider(PlainBlob, pulumi.dynamic.ResourceProvider):
    """Creates or evolves one declared table (contract: the package docstring)."""

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
        # New provider code is recorded by an update: apply is idempotent, a table as declared is left alone.
        changed = changed or code_changed(olds, news)
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
        """Forget the declaration; the table and its data stay (see the package docstring)."""


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
