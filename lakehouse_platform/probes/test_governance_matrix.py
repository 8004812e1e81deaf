"""Probe — the grants hold the same way through every engine and the store: an allow/deny matrix per identity x
namespace x action (governance). Non-disruptive: it works in canary namespaces of its own and leaves nothing behind.

The stack's ``grants`` output is what every enforcer was rendered from (``PlatformSpec.access_of``): identity ->
namespace (or ``*``) -> read, write, manage. For each identity and each canary namespace the probe tries, through
PyIceberg, Spark, each SQL engine service (Trino: the identity's own catalog) and DuckDB:

- load (read the table's rows) and list (the namespace's tables show the table): need read;
- commit (append one row): needs write;
- create and drop a table: need manage;

and with the identity's own store keys, a get of one of the table's data files (read) and a put under the table's
location (write). What is expected is what the grants say; an attempt counts as refused only when its error says
so (a store 403, the gate's 401/403, Trino's access control), a listing that simply does not show the table, and,
on a namespace the identity may not read, an engine saying it does not exist (the gate's listing hid it).
Every refused attempt of an identity on a namespace runs before any allowed one, between two looks (as the
platform's identity) at the table's metadata file, snapshots, the namespace's tables and every store object under
it: a refusal must leave all of them as they were.

Canary namespaces: the known namespaces named ``canary_*`` (``governance.namespaces``; ``make verify`` declares two,
with team identities whose grants differ per namespace: lakehouse_platform/control/isolated.py), else two of this run's own
under ``*``. The platform's identity makes them and their table, and removes namespaces, tables and store objects
at the end (leftovers of an interrupted run first).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from lakehouse_platform.paths import reports_dir
from lakehouse_platform.probes.support import engines, services
from lakehouse_platform.probes.support.refusals import REFUSAL, describe, short
from lakehouse_platform.probes.support.stack import Stack, fail

# Safe: it works in canary namespaces (canary_*) that it makes and removes with every object under them, and
# every refused attempt is checked to have changed nothing.
pytestmark = [pytest.mark.governance, pytest.mark.safe]

CANARY = "canary_"
TABLE = "t"
#: What each action needs (the grants' words).
NEEDS = {"load": "read", "list": "read", "commit": "write", "create": "manage", "drop": "manage",
         "store get": "read", "store put": "write"}
TABLE_ACTIONS = ("load", "list", "commit", "create", "drop")
#: An engine that cannot do an action at all (not a refusal): what its error says.
NOT_SUPPORTED = ("Not implemented", "not implemented", "NotImplemented", "not supported", "Not supported")
#: What an engine says of a namespace the gate's listing hid from the identity (DuckDB resolves names from the
#: listing it read when it attached): a refusal only where the identity may not read the namespace.
HIDDEN = ("does not exist", "NoSuchNamespace", "NoSuchTable")
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"r{i}" for i in ids]}, schema=SCHEMA)


@dataclass
class Outcome:
    identity: str
    namespace: str
    action: str
    engine: str
    expected: str  # allowed | denied
    observed: str  # allowed | denied | n/a (the engine cannot do it) | error
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.observed in (self.expected, "n/a")


@dataclass
class Matrix:
    outcomes: list[Outcome] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)  # a refused attempt that changed something


def expected(grants: dict[str, dict[str, list[str]]], identity: str, action: str, namespace: str) -> str:
    table = grants[identity]
    listed = table.get(namespace, table.get("*", []))
    return "allowed" if NEEDS[action] in listed else "denied"


def run(action: Callable[[], Any], hidden: bool = False) -> tuple[str, str]:
    """(observed, detail) of one attempt: allowed, denied (a refusal), n/a (the engine cannot) or error.

    ``hidden``: the identity may not read the namespace, so the gate's listing hides it and an engine that
    resolves names from that listing says it does not exist: a refusal too.
    """
    try:
        result = action()
    except Exception as exc:  # noqa: BLE001 - the outcome is the evidence
        text = describe(exc)
        if any(marker in text for marker in REFUSAL):
            return "denied", short(exc)
        if hidden and any(marker in text for marker in HIDDEN):
            return "denied", f"hidden: {short(exc)}"
        if any(marker in text for marker in NOT_SUPPORTED):
            return "n/a", short(exc)
        return "error", short(exc)
    if result is False:  # a listing without the table
        return "denied", "not listed"
    return "allowed", str(result)[:120]


class Canary:
    """A canary namespace with its table, as the platform's identity sees and tends it."""

    def __init__(self, stack: Stack, admin: str, namespace: str):
        self.stack, self.admin, self.namespace = stack, admin, namespace
        self.catalog = stack.catalog(name=f"gov-admin-{namespace}", identity=admin)
        self.s3 = stack.s3(identity=admin)

    @property
    def ident(self) -> str:
        return f"{self.namespace}.{TABLE}"

    def remove(self) -> None:
        """Every table of the namespace purged, every object under its prefix deleted, the namespace dropped."""
        from pyiceberg.exceptions import NoSuchNamespaceError

        try:
            tables = self.catalog.list_tables(self.namespace)
        except NoSuchNamespaceError:
            tables = []
        for ident in tables:
            try:
                self.catalog.purge_table(ident)
            except Exception:  # noqa: BLE001 - a table another attempt dropped meanwhile
                pass
        self.delete_objects(f"{self.namespace}/")
        try:
            self.catalog.drop_namespace(self.namespace)
        except NoSuchNamespaceError:
            pass

    def create(self) -> None:
        self.remove()  # an interrupted run's leftovers
        self.catalog.create_namespace(self.namespace)
        table = self.catalog.create_table(self.ident, schema=SCHEMA)
        table.append(rows(1, 2))

    def objects(self, prefix: str | None = None) -> set[str]:
        found: set[str] = set()
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.stack.bucket,
                                                                      Prefix=prefix or f"{self.namespace}/"):
            found.update(o["Key"] for o in page.get("Contents", []))
        return found

    def delete_objects(self, prefix: str) -> None:
        for key in self.objects(prefix):
            self.s3.delete_object(Bucket=self.stack.bucket, Key=key)

    def state(self) -> dict[str, Any]:
        """What a refused attempt must not change: the table's pointer and snapshots, the tables, the objects."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            table = self.catalog.load_table(self.ident)
            pointer: Any = {"metadata": table.metadata_location,
                            "snapshots": [s.snapshot_id for s in table.snapshots()]}
        except NoSuchTableError:
            pointer = {"metadata": "the table is gone", "snapshots": []}
        return {**pointer, "tables": sorted(".".join(t) for t in self.catalog.list_tables(self.namespace)),
                "objects": sorted(self.objects())}

    def data_file(self) -> str:
        return next(k for k in sorted(self.objects()) if k.endswith(".parquet"))

    def victim(self, name: str) -> str:
        ident = f"{self.namespace}.{name}"
        self.catalog.create_table(ident, schema=SCHEMA)
        return ident

    def drop_if_there(self, name: str) -> None:
        try:
            self.catalog.purge_table(f"{self.namespace}.{name}")
        except Exception:  # noqa: BLE001 - not there: nothing to clean
            pass


class Engines:
    """One way per engine to try each action as an identity."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.spark = engines.spark_session(stack)
        self.spark_catalogs: set[str] = set()
        # The stack's engine services (Trino), each driven through its own package's probe hook.
        self.sql = {engine.name: engine for engine in services.engines(stack)}
        self.names = ("pyiceberg", engines.SPARK, *self.sql, "duckdb")

    def spark_catalog(self, identity: str) -> str:
        name = "gov_" + identity.replace("-", "_")
        if name not in self.spark_catalogs:
            for key, value in engines.spark_catalog_conf(self.stack, identity, name=name).items():
                if key.startswith(f"spark.sql.catalog.{name}"):
                    self.spark.conf.set(key, value)
            self.spark_catalogs.add(name)
        return name

    def attempt(self, engine: str, identity: str, action: str, namespace: str, table: str) -> Callable[[], Any]:
        ident = f"{namespace}.{table}"
        if engine == "pyiceberg":
            catalog = self.stack.catalog(name=f"gov-{identity}", identity=identity)
            return {
                "load": lambda: catalog.load_table(ident).scan().to_arrow().num_rows,
                "list": lambda: (namespace, TABLE) in [tuple(t) for t in catalog.list_tables(namespace)],
                "commit": lambda: catalog.load_table(ident).append(rows(100)),
                "create": lambda: catalog.create_table(ident, schema=SCHEMA),
                "drop": lambda: catalog.drop_table(ident),
            }[action]
        if engine == engines.SPARK:
            name = self.spark_catalog(identity)
            sql = {"load": f"SELECT count(*) FROM {name}.{ident}",
                   "list": f"SHOW TABLES IN {name}.{namespace}",
                   "commit": f"INSERT INTO {name}.{ident} VALUES (200, 'spark')",
                   "create": f"CREATE TABLE {name}.{ident} (id bigint, v string) USING iceberg",
                   "drop": f"DROP TABLE {name}.{ident}"}[action]
            if action == "list":
                return lambda: TABLE in [r.tableName for r in self.spark.sql(sql).collect()]
            return lambda: self.spark.sql(sql).collect()
        if engine in self.sql:
            service = self.sql[engine]
            catalog = service.catalog_of(identity)
            quoted = f'"{namespace}"."{table}"'
            sql = {"load": f"SELECT count(*) FROM {quoted}", "list": f'SHOW TABLES FROM "{namespace}"',
                   "commit": f"INSERT INTO {quoted} VALUES (300, '{engine}')",
                   "create": f"CREATE TABLE {quoted} (id bigint, v varchar)", "drop": f"DROP TABLE {quoted}"}[action]

            def through_engine() -> Any:
                if catalog is None:
                    raise PermissionError(f"Access Denied: identity {identity} reaches no catalog of {engine}")
                found = service.run(identity, [sql], catalog)
                return TABLE in [r[0] for r in found] if action == "list" else found
            return through_engine
        sql = {"load": f"SELECT count(*) FROM lab.{ident}",
               "list": f"SELECT table_name FROM information_schema.tables WHERE table_catalog = 'lab' AND "
                       f"table_schema = '{namespace}'",
               "commit": f"INSERT INTO lab.{ident} VALUES (400, 'duckdb')",
               "create": f"CREATE TABLE lab.{ident} (id BIGINT, v VARCHAR)", "drop": f"DROP TABLE lab.{ident}"}[action]

        def duck() -> Any:
            con, _ = engines.duckdb_connect(self.stack, writable=True, identity=identity)
            try:
                found = con.execute(sql).fetchall()
            finally:
                con.close()
            return TABLE in [r[0] for r in found] if action == "list" else found
        return duck


def store_attempt(s3: Any, bucket: str, action: str, key: str) -> Callable[[], Any]:
    """A get of an existing object, or a put of a new one, with an identity's own store keys."""
    if action == "store get":
        return lambda: len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    return lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"x")


def canary_namespaces(stack: Stack, grants: dict[str, dict[str, list[str]]]) -> list[str]:
    declared = sorted({ns for table in grants.values() for ns in table if ns.startswith(CANARY)})
    return declared or [f"{CANARY}{stack.run_id}_a", f"{CANARY}{stack.run_id}_b"]


@contextmanager
def canaries(stack: Stack, admin: str, namespaces: list[str]) -> Iterator[dict[str, Canary]]:
    made = {ns: Canary(stack, admin, ns) for ns in namespaces}
    try:
        for canary in made.values():
            canary.create()
        yield made
    finally:
        for canary in made.values():
            canary.remove()


def test_every_identity_may_do_exactly_what_its_grants_say_through_every_engine_and_the_store(stack: Stack, figure,
                                                                                              say):
    grants: dict[str, dict[str, list[str]]] = stack.outputs.get("grants") or {}
    if not grants:
        pytest.skip("the stack outputs have no grants (deployed before grants existed? run make up again)")
    admin = stack.platform_identity
    if admin is None:
        pytest.skip("the stack's credentials name no platform identity to set the canaries up")
    identities = list(grants)
    namespaces = canary_namespaces(stack, grants)
    matrix = Matrix()
    tries = Engines(stack)
    with canaries(stack, admin, namespaces) as made:
        leftover = sorted(set(namespaces) - {".".join(ns) for ns in made[namespaces[0]].catalog.list_namespaces()})
        assert not leftover, f"the canaries were not made: {leftover}"
        for identity in identities:
            s3 = stack.s3(identity=identity, retries=1)
            for namespace in namespaces:
                canary = made[namespace]
                want = {action: expected(grants, identity, action, namespace) for action in NEEDS}
                tag = f"{identity.replace('-', '_')}"
                put_key = f"{namespace}/{TABLE}/data/put-by-{identity}.bin"
                before = canary.state()
                # -- every refusal first, between two looks at the namespace -------------------------------
                for action in TABLE_ACTIONS:
                    if want[action] != "denied":
                        continue
                    for engine in tries.names:
                        table = f"made_{tag}_{engine}" if action == "create" else TABLE
                        observed, detail = run(tries.attempt(engine, identity, action, namespace, table),
                                               hidden=want["load"] == "denied")
                        matrix.outcomes.append(Outcome(identity, namespace, action, engine, "denied", observed,
                                                       detail))
                for action in ("store get", "store put"):
                    if want[action] == "denied":
                        key = canary.data_file() if action == "store get" else put_key
                        observed, detail = run(store_attempt(s3, stack.bucket, action, key))
                        matrix.outcomes.append(Outcome(identity, namespace, action, "store", "denied", observed,
                                                       detail))
                after = canary.state()
                if after != before:
                    matrix.traces.append(f"{identity} on {namespace}: " + json.dumps(
                        {k: {"before": before[k], "after": after[k]} for k in before if before[k] != after[k]})[:600])
                # -- then what is allowed ------------------------------------------------------------------
                for action in TABLE_ACTIONS:
                    if want[action] != "allowed":
                        continue
                    for engine in tries.names:
                        table = TABLE
                        if action in ("create", "drop"):
                            table = f"{action}_{tag}_{engine}"
                            canary.drop_if_there(table)
                            if action == "drop":
                                canary.victim(table)
                        observed, detail = run(tries.attempt(engine, identity, action, namespace, table))
                        matrix.outcomes.append(Outcome(identity, namespace, action, engine, "allowed", observed,
                                                       detail))
                        if action in ("create", "drop"):
                            canary.drop_if_there(table)
                for action in ("store get", "store put"):
                    if want[action] == "allowed":
                        key = canary.data_file() if action == "store get" else put_key
                        observed, detail = run(store_attempt(s3, stack.bucket, action, key))
                        matrix.outcomes.append(Outcome(identity, namespace, action, "store", "allowed", observed,
                                                       detail))
                canary.delete_objects(put_key)
        remaining = {ns: sorted(".".join(t) for t in made[ns].catalog.list_tables(ns)) for ns in namespaces}
    gone = made[namespaces[0]].catalog
    still_there = [ns for ns in namespaces if (ns,) in [tuple(n) for n in gone.list_namespaces()]]
    objects_left = sorted(k for ns in namespaces for k in made[ns].objects(f"{ns}/"))

    report = reports_dir() / "governance-matrix.json"
    report.parent.mkdir(exist_ok=True)
    report.write_text(json.dumps([o.__dict__ for o in matrix.outcomes], indent=1))
    for identity in identities:
        for namespace in namespaces:
            cells = [o for o in matrix.outcomes if (o.identity, o.namespace) == (identity, namespace)]
            line = "; ".join(
                f"{action} {'/'.join(sorted({o.observed for o in cells if o.action == action}))}"
                for action in NEEDS)
            say(f"== {identity} on {namespace} (grants {grants[identity].get(namespace, grants[identity]['*'])}): "
                f"{line}")
    wrong = [o for o in matrix.outcomes if not o.ok]
    gaps = [o for o in matrix.outcomes if o.observed == "n/a"]
    for o in gaps:
        say(f"== n/a: {o.engine} cannot {o.action} ({o.detail})")
    figure(f"{len(identities)} identities x {len(namespaces)} namespaces: {len(matrix.outcomes) - len(wrong)}/"
           f"{len(matrix.outcomes)} attempts as the grants say ({len(gaps)} n/a); "
           f"{sum(o.expected == 'denied' for o in matrix.outcomes)} refusals, {len(matrix.traces)} left a trace; "
           f"canaries removed: {not still_there and not objects_left}")
    if wrong or matrix.traces or still_there or objects_left:
        fail(stack, "governance", "an identity could do what its grants do not allow, or could not do what they do "
             "(or a refusal left a trace, or the probe left something behind)",
             {"not as granted": [f"{o.identity} {o.action} on {o.namespace} via {o.engine}: expected {o.expected}, "
                                 f"{o.observed} ({o.detail})" for o in wrong][:30],
              "traces": matrix.traces, "namespaces left": still_there, "objects left": objects_left[:10],
              "tables at the end": remaining, "matrix": str(report)})
