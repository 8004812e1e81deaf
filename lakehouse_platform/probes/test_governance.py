"""Probe — governance fails closed: the read-only identity reads through every engine and writes through none;
no credentials, or wrong ones, are refused, never served (governance).

The writer (the identity the host profiles name) makes a table with two snapshots. The reader
(``profiles.host.reader_identity``) then reads it through Spark, PyIceberg, DuckDB and Trino, and tries
to change it through each of them: data writes (append, INSERT), metadata writes (schema change,
create, drop), and Trino's table procedures, which Trino's own access control does not gate
(``optimize``, ``expire_snapshots``, ``remove_orphan_files``). Every attempt must be refused, and
afterwards storage must hold exactly the objects it held before (listed by the platform's identity),
the table the same metadata file and snapshots, and an orphan file planted under the table must still
be there (a reader deletes nothing). Then clients with no or wrong credentials try the catalog, the
store and Trino: every one is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
import requests
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.types import StringType

from lakehouse_platform.probes.support import engines, services
from lakehouse_platform.probes.support.refusals import REFUSAL, describe, short
from lakehouse_platform.probes.support.stack import Stack, fail

# Safe: the writer's table is in the run's own namespace (purged at the end); every write the reader tries is
# refused, and the orphan it plants is under that table.
pytestmark = [pytest.mark.governance, pytest.mark.safe]

ROWS = 40
SCHEMA = pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("amount", pa.float64())])


@dataclass
class Attempt:
    engine: str
    what: str
    refused: bool
    detail: str


def rows(start: int, count: int) -> pa.Table:
    return pa.table({"order_id": list(range(start, start + count)), "amount": [i * 1.5 for i in range(count)]},
                    schema=SCHEMA)


def attempt(log: list[Attempt], engine: str, what: str, action: Callable[[], Any]) -> None:
    """Run one write the reader must not be able to make; record whether it was refused.

    Only an error that says it is a refusal counts: any other failure proves nothing and is reported so.
    """
    try:
        result = action()
    except Exception as exc:  # noqa: BLE001 - the refusal is the expected outcome; its message is the evidence
        text = describe(exc)
        if any(marker in text for marker in REFUSAL):
            log.append(Attempt(engine, what, True, short(exc)))
        else:
            log.append(Attempt(engine, what, False, f"failed, but not as a refusal: {short(exc)}"))
        return
    log.append(Attempt(engine, what, False, f"succeeded: {str(result)[:200]}"))


def platform_identity(stack: Stack) -> str:
    for name, creds in (stack.credentials.get("identities") or {}).items():
        if creds.get("role") == "platform":
            return name
    pytest.skip("the stack's credentials name no platform identity")


def objects(s3, bucket: str, prefix: str) -> set[str]:
    found: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found.update(o["Key"] for o in page.get("Contents", []))
    return found


def test_read_only_identity_reads_through_every_engine_and_writes_through_none(stack: Stack, created_tables, figure,
                                                                                say):
    reader, writer = stack.reader_identity, stack.identity
    admin = platform_identity(stack)
    namespace = f"probe_{stack.run_id}_gov"
    ident = f"{namespace}.orders"
    writer_catalog = stack.catalog()
    writer_catalog.create_namespace(namespace)
    created_tables.append(ident)
    table = writer_catalog.create_table(ident, schema=SCHEMA)
    table.append(rows(0, ROWS // 2))
    table.append(rows(ROWS // 2, ROWS // 2))
    table = writer_catalog.load_table(ident)
    say(f"== {writer} wrote {ROWS} rows in 2 snapshots to {ident}")

    # An orphan a remove_orphan_files run would delete (written by the platform's identity, outside any snapshot).
    store = stack.s3(identity=admin)
    location = table.metadata.location.removeprefix(f"s3://{stack.bucket}/")
    orphan = f"{location}/data/orphan-planted-by-the-governance-probe.parquet"
    store.put_object(Bucket=stack.bucket, Key=orphan, Body=b"not a data file")
    before = objects(store, stack.bucket, f"{namespace}/")
    pointer = (table.metadata_location, [s.snapshot_id for s in table.snapshots()], table.schema().schema_id)

    # -- reads: the reader sees the table through all four engines --------------------------------------
    reads: dict[str, Any] = {}
    reader_catalog = stack.catalog(name="reader", identity=reader)
    try:
        reads["pyiceberg"] = reader_catalog.load_table(ident).scan().to_arrow().num_rows
    except Exception as exc:  # noqa: BLE001
        reads["pyiceberg"] = short(exc)
    try:
        con, _ = engines.duckdb_connect(stack, identity=reader)
        reads["duckdb"] = con.execute(f"SELECT count(*) FROM lab.{ident}").fetchone()[0]
    except Exception as exc:  # noqa: BLE001
        reads["duckdb"] = short(exc)
        con = None
    spark = engines.spark_session(stack)
    for key, value in engines.spark_catalog_conf(stack, reader, name="reader").items():
        if key.startswith("spark.sql.catalog.reader"):
            spark.conf.set(key, value)
    try:
        reads[engines.SPARK] = spark.table(f"reader.{ident}").count()
    except Exception as exc:  # noqa: BLE001
        reads[engines.SPARK] = short(exc)
    engine_services = services.engines(stack)  # the engine services of the stack (Trino), each its package's
    for engine in engine_services:
        try:
            reads[engine.name] = engine.count(reader, namespace, "orders")
        except Exception as exc:  # noqa: BLE001
            reads[engine.name] = short(exc)
    say(f"== {reader} reads: {reads}")
    if any(value != ROWS for value in reads.values()):
        fail(stack, "governance", f"the read-only identity {reader!r} cannot read the table through every engine",
             {"expected": ROWS, "reads": reads})

    # -- writes: every one refused ------------------------------------------------------------------------
    log: list[Attempt] = []
    reader_table = reader_catalog.load_table(ident)
    attempt(log, "pyiceberg", "append", lambda: reader_table.append(rows(1000, 5)))
    attempt(log, "pyiceberg", "add column (schema change)",
            lambda: reader_catalog.load_table(ident).update_schema().add_column("note", StringType()).commit())
    attempt(log, "pyiceberg", "set a table property",
            lambda: reader_catalog.load_table(ident).transaction().set_properties({"owner": reader}).commit_transaction())
    attempt(log, "pyiceberg", "create table", lambda: reader_catalog.create_table(f"{namespace}.made_by_reader",
                                                                                  schema=SCHEMA))
    attempt(log, "pyiceberg", "drop table", lambda: reader_catalog.drop_table(ident))
    if con is not None:
        attempt(log, "duckdb", "INSERT", lambda: con.execute(f"INSERT INTO lab.{ident} VALUES (2000, 1.0)"))
        con.close()
    attempt(log, engines.SPARK, "INSERT", lambda: spark.sql(f"INSERT INTO reader.{ident} VALUES (3000, 1.0)").collect())
    attempt(log, engines.SPARK, "ALTER TABLE ADD COLUMN",
            lambda: spark.sql(f"ALTER TABLE reader.{ident} ADD COLUMN note string").collect())
    attempt(log, engines.SPARK, "DELETE", lambda: spark.sql(f"DELETE FROM reader.{ident} WHERE order_id < 5").collect())
    for engine in engine_services:  # every write and table procedure the engine offers, each refused
        for what, action in engine.writes(reader, namespace, "orders"):
            attempt(log, engine.name, what, action)

    after = objects(store, stack.bucket, f"{namespace}/")
    try:
        table = writer_catalog.load_table(ident)
        pointer_after: tuple[Any, ...] = (table.metadata_location, [s.snapshot_id for s in table.snapshots()],
                                          table.schema().schema_id)
    except NoSuchTableError:
        pointer_after = ("the table is gone",)
    tables_after = sorted(".".join(t) for t in writer_catalog.list_tables(namespace))
    store.delete_object(Bucket=stack.bucket, Key=orphan)
    for item in log:
        say(f"== {reader} via {item.engine}: {item.what}: {'refused' if item.refused else 'ALLOWED'} ({item.detail})")
    allowed = [item for item in log if not item.refused]
    landed = sorted(after - before)
    gone = sorted(before - after)
    figure(f"{reader} read {ROWS} rows via {'/'.join(reads)}; {len(log) - len(allowed)}/{len(log)} writes refused; "
           f"{len(landed)} objects landed, {len(gone)} removed; pointer {'unchanged' if pointer == pointer_after else 'CHANGED'}")
    if allowed or landed or gone or pointer != pointer_after or tables_after != [ident]:
        fail(stack, "governance", f"the read-only identity {reader!r} changed something (fails open)",
             {"allowed": [f"{a.engine}: {a.what}: {a.detail}" for a in allowed], "objects landed": landed[:10],
              "objects removed": gone[:10], "pointer before": pointer, "pointer after": pointer_after,
              "tables": tables_after})


def test_no_or_wrong_credentials_are_refused_never_served(stack: Stack, figure, say):
    props = stack.pyiceberg_props()
    uri = props["uri"].rstrip("/")
    refused: list[Attempt] = []
    session = requests.Session()
    session.trust_env = False

    def status(what: str, response: requests.Response, wanted: tuple[int, ...] = (401,)) -> None:
        refused.append(Attempt("catalog", what, response.status_code in wanted, f"HTTP {response.status_code}"))

    if not props.get("token"):
        pytest.skip("the default catalog authenticates its own principals (no gate on this stack)")
    status("GET /v1/config without a token", session.get(f"{uri}/v1/config", timeout=10))
    status("GET /v1/namespaces with a wrong token",
           session.get(f"{uri}/v1/namespaces", headers={"Authorization": "Bearer not-a-token"}, timeout=10))
    status("POST a namespace without a token", session.post(f"{uri}/v1/namespaces", json={"namespace": ["x"]},
                                                            timeout=10))

    from pyiceberg.catalog import load_catalog

    no_token = {k: v for k, v in props.items() if k != "token"}
    attempt(refused, "pyiceberg", "load the catalog without a token", lambda: load_catalog("nobody", **no_token))
    attempt(refused, "pyiceberg", "load the catalog with a wrong token",
            lambda: load_catalog("wrong", **{**props, "token": "wrong-token"}))
    wrong_s3 = {**props, "s3.secret-access-key": "not-the-secret"}

    def scan_with_wrong_store_key() -> int:
        catalog = load_catalog("wrongkey", **wrong_s3)
        tables = [t for ns in catalog.list_namespaces() for t in catalog.list_tables(ns)]
        if not tables:
            raise AssertionError("no table to read")  # nothing to prove it on: counted as not refused below
        return catalog.load_table(tables[0]).scan().to_arrow().num_rows

    try:
        scan_with_wrong_store_key()
        refused.append(Attempt("store", "read table files with a wrong secret key", False, "served"))
    except AssertionError as exc:
        pytest.skip(f"no table on the stack to read: {exc}")
    except Exception as exc:  # noqa: BLE001
        refused.append(Attempt("store", "read table files with a wrong secret key", True, short(exc)))
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    endpoint = props.get("s3.endpoint")
    if endpoint:
        anonymous = boto3.client("s3", endpoint_url=endpoint, region_name=props.get("s3.region", "us-east-1"),
                                 config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                               retries={"max_attempts": 1}))
        attempt(refused, "store", "list the bucket without credentials",
                lambda: anonymous.list_objects_v2(Bucket=stack.bucket, MaxKeys=1))

    import duckdb

    def duckdb_wrong_token() -> Any:
        con = duckdb.connect()
        for statement in stack.duckdb_statements():
            con.execute(statement.replace(props["token"], "wrong-token"))
        return con.execute("SHOW ALL TABLES").fetchall()

    attempt(refused, "duckdb", "attach with a wrong token", duckdb_wrong_token)
    spark = engines.spark_session(stack)
    for key, value in engines.spark_catalog_conf(stack, name="nobody").items():
        if key.startswith("spark.sql.catalog.nobody"):
            spark.conf.set(key, "wrong-token" if key.endswith(".token") else value)
    attempt(refused, engines.SPARK, "list namespaces with a wrong token", lambda: spark.sql("SHOW NAMESPACES IN nobody").collect())

    for engine in services.engines(stack):  # each engine service's wrong or missing credentials (Trino's)
        for what, action in engine.refusals():
            attempt(refused, engine.name, what, action)

    for item in refused:
        say(f"== {item.engine}: {item.what}: {'refused' if item.refused else 'SERVED'} ({item.detail})")
    served = [item for item in refused if not item.refused]
    figure(f"{len(refused) - len(served)}/{len(refused)} unauthenticated or wrongly authenticated requests refused "
           f"(catalog, store, {', '.join(dict.fromkeys(a.engine for a in refused if a.engine not in ('catalog', 'store')))})")
    if served:
        fail(stack, "governance", "a client with no or wrong credentials was served (fails open)",
             [f"{a.engine}: {a.what}: {a.detail}" for a in served])
