"""Real clients through the catalog gate: PyIceberg's and Iceberg Java's (Spark's) default credential flows.

A real REST fixture (the native stack's build from the artifact cache, on a SQLite file and a
``file://`` warehouse of its own) with a real gate in front (``lakehouse_platform.probes.support.gate``). Each
client authenticates the way its users configure it by default: PyIceberg with ``credential``
(client credentials at the gate's token endpoint, and a new token on a 401 once it expires), Iceberg
Java in Spark with ``credential`` and with a static ``token`` whose refresh (a token exchange) goes to
the gate. The writer writes, the reader reads, and the reader's writes are refused.

Toolchain tier: needs ``make artifacts`` (the fixture build, the Spark runtime jars) and a JDK 17.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request
from collections.abc import Iterator

import pyarrow as pa
import pytest

from lakehouse_platform.probes.support import gate as support_gate
from lakehouse_platform.probes.support.fixture import free_port

pytestmark = pytest.mark.toolchain

#: The Iceberg REST spec's token endpoint (the gate's own).
TOKEN_PATH = "/v1/oauth/tokens"
TOKENS = {"platform": "clients-platform-token", "writer": "clients-writer-token", "reader": "clients-reader-token",
          "etl": "clients-etl-token"}
#: A team identity's access table (what the spec renders for grants {sales: [read, write, manage], hr: [read]} with
#: sales and hr known): it manages sales, reads hr, and nothing else.
ETL_GRANTS = {"sales": ["read", "write", "manage"], "hr": ["read"], "*": []}
#: Issued tokens live this long here, so that every client's refresh happens within the test.
TOKEN_LIFETIME_S = 20
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("note", pa.string())])


def rows(start: int, count: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + count)), "note": [f"n{i}" for i in range(count)]}, schema=SCHEMA)


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[support_gate.RunningFixture, support_gate.RunningGate]]:
    runtime = support_gate.fixture_runtime()
    if runtime is None:
        pytest.skip("no REST fixture build in the artifact cache (make artifacts) or no JDK 17")
    work = tmp_path_factory.mktemp("gate-clients")
    with support_gate.rest_fixture(runtime, work, free_port()) as fixture, \
            support_gate.running_gate({"upstream": fixture.uri,
                                       "identities": support_gate.identities(TOKENS, {"etl": ETL_GRANTS}),
                                        "token_lifetime_s": TOKEN_LIFETIME_S}) as gate:
        yield fixture, gate


def metric(gate: support_gate.RunningGate, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{gate.url}/metrics", timeout=10) as response:  # noqa: S310 - loopback
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return sample.value
    return 0.0


def pyiceberg_catalog(gate: support_gate.RunningGate, identity: str, **extra: str):
    from pyiceberg.catalog import load_catalog

    return load_catalog(f"gated-{identity}", type="rest", uri=gate.url, credential=f"{identity}:{TOKENS[identity]}",
                        **extra)


def test_pyiceberg_credential_flow_writes_as_the_writer_reads_as_the_reader_and_refreshes(stack):
    from pyiceberg.exceptions import ForbiddenError

    _, gate = stack
    issued_before = metric(gate, "lakehouse_catalog_gate_requests_total", identity="writer", decision="token_issued")
    # PyIceberg's default: the token endpoint under the catalog's URI; the profiles name it explicitly.
    writer = pyiceberg_catalog(gate, "writer")
    writer.create_namespace("py")
    table = writer.create_table("py.orders", SCHEMA)
    table.append(rows(0, 10))
    reader = pyiceberg_catalog(gate, "reader", **{"oauth2-server-uri": f"{gate.url}{TOKEN_PATH}"})
    assert reader.load_table("py.orders").scan().to_arrow().num_rows == 10
    with pytest.raises(ForbiddenError):
        reader.load_table("py.orders").append(rows(100, 1))
    with pytest.raises(ForbiddenError):
        reader.drop_table("py.orders")
    # Once its token has expired, the gate answers 401 and PyIceberg fetches a new one with its credential.
    time.sleep(TOKEN_LIFETIME_S + 1)
    writer.load_table("py.orders").append(rows(10, 5))
    assert reader.load_table("py.orders").scan().to_arrow().num_rows == 15
    assert metric(gate, "lakehouse_catalog_gate_requests_total", identity="writer",
                  decision="token_issued") >= issued_before + 2
    assert metric(gate, "lakehouse_catalog_gate_authenticated_total", identity="writer", credential="issued") > 0


@pytest.fixture(scope="module")
def spark(stack):
    jars = support_gate.spark_jars()
    if jars is None:
        pytest.skip("no Iceberg runtime jars for Spark in the artifact cache (make artifacts)")
    from lakehouse_platform.artifacts import java

    _, gate = stack
    os.environ["JAVA_HOME"] = str(java.find_java(17))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    conf = {"spark.master": "local[1]", "spark.driver.memory": "768m", "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.jars": ",".join(jars),
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"}
    catalogs = {
        # Iceberg Java's client credentials flow, for each identity.
        "w": {"credential": f"writer:{TOKENS['writer']}"},
        "r": {"credential": f"reader:{TOKENS['reader']}"},
        # A static token (what the profiles give), whose refresh is a token exchange at the gate: due
        # after token-expires-in-ms (default an hour; 4 s here).
        "p": {"token": TOKENS["platform"], "token-expires-in-ms": "4000"},
    }
    for name, auth in catalogs.items():
        prefix = f"spark.sql.catalog.{name}"
        conf.update({prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "rest",
                     f"{prefix}.uri": gate.url, f"{prefix}.oauth2-server-uri": f"{gate.url}{TOKEN_PATH}",
                     f"{prefix}.cache-enabled": "false", **{f"{prefix}.{k}": v for k, v in auth.items()}})
    builder = SparkSession.builder.appName("gate-clients")
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_iceberg_java_credential_flow_writes_as_the_writer_and_refuses_the_readers_writes(stack, spark):
    _, gate = stack
    spark.sql("CREATE NAMESPACE IF NOT EXISTS w.jv")
    spark.sql("CREATE TABLE w.jv.orders (id BIGINT, note STRING) USING iceberg")
    spark.sql("INSERT INTO w.jv.orders VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert spark.sql("SELECT count(*) FROM r.jv.orders").collect()[0][0] == 3
    for statement in ("INSERT INTO r.jv.orders VALUES (4, 'd')", "ALTER TABLE r.jv.orders ADD COLUMN extra INT",
                      "DROP TABLE r.jv.orders"):
        with pytest.raises(Exception, match=r"ForbiddenException|Forbidden|403") as refused:
            spark.sql(statement).collect()
        assert "reader" in str(refused.value), statement
    assert spark.sql("SELECT count(*) FROM w.jv.orders").collect()[0][0] == 3
    assert metric(gate, "lakehouse_catalog_gate_requests_total", identity="reader", decision="token_issued") >= 1
    assert metric(gate, "lakehouse_catalog_gate_authenticated_total", identity="reader", credential="issued") > 0
    assert metric(gate, "lakehouse_catalog_gate_authenticated_total", identity="reader", credential="static") == 0
    # Iceberg Java refreshes its token before it expires (at 90% of its life): still writing after that.
    time.sleep(TOKEN_LIFETIME_S + 2)
    spark.sql("INSERT INTO w.jv.orders VALUES (5, 'e')")
    assert spark.sql("SELECT count(*) FROM r.jv.orders").collect()[0][0] == 4
    assert metric(gate, "lakehouse_catalog_gate_requests_total", identity="writer", decision="token_issued") >= 2


def test_iceberg_java_static_token_is_refreshed_at_the_gate(stack, spark):
    _, gate = stack
    spark.sql("CREATE NAMESPACE IF NOT EXISTS p.st")
    spark.sql("CREATE TABLE p.st.events (id BIGINT) USING iceberg")
    assert metric(gate, "lakehouse_catalog_gate_authenticated_total", identity="platform", credential="static") > 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not metric(gate, "lakehouse_catalog_gate_requests_total",
                                                     identity="platform", decision="token_issued"):
        time.sleep(0.5)
    assert metric(gate, "lakehouse_catalog_gate_requests_total", identity="platform", decision="token_issued") >= 1, \
        "Iceberg Java's refresh of the static token (a token exchange) did not reach the gate's token endpoint"
    spark.sql("INSERT INTO p.st.events VALUES (1), (2)")
    assert spark.sql("SELECT count(*) FROM p.st.events").collect()[0][0] == 2
    assert metric(gate, "lakehouse_catalog_gate_authenticated_total", identity="platform", credential="issued") > 0


def test_the_reader_cannot_write_through_the_fixture_behind_the_gate(stack):
    """The same write the gate refuses reaches the fixture when sent to it directly: the gate is what refuses."""
    import requests

    fixture, gate = stack
    body = {"namespace": ["direct_probe"]}
    token = {"Authorization": f"Bearer {TOKENS['reader']}"}
    assert requests.post(f"{gate.url}/v1/namespaces", json=body, headers=token, timeout=30).status_code == 403
    assert requests.post(f"{fixture.uri}/v1/namespaces", json=body, timeout=30).status_code == 200


def test_a_team_identity_reaches_its_namespaces_only_with_real_clients_requests(stack):
    """PyIceberg as a team identity through the gate to the real fixture: what its grants allow per namespace, the
    namespace listing filtered, a create-table transaction (a commit with assert-create) refused where it may not
    manage, and nothing changed by a refusal."""
    from pyiceberg.exceptions import ForbiddenError

    _, gate = stack
    platform = pyiceberg_catalog(gate, "platform")
    for namespace in ("sales", "hr", "ops"):
        platform.create_namespace(namespace)
        platform.create_table(f"{namespace}.t", SCHEMA).append(rows(0, 3))
    etl = pyiceberg_catalog(gate, "etl")
    assert sorted(ns for (ns, *_) in etl.list_namespaces() if ns in ("sales", "hr", "ops")) == ["hr", "sales"]
    etl.load_table("sales.t").append(rows(10, 2))
    etl.create_table("sales.made_by_etl", SCHEMA)
    assert etl.load_table("hr.t").scan().to_arrow().num_rows == 3
    before = platform.load_table("hr.t").metadata_location
    with pytest.raises(ForbiddenError, match="etl may not write on hr"):
        etl.load_table("hr.t").append(rows(20, 1))  # hr is read-only for it (the file is written, the commit refused)
    with pytest.raises(ForbiddenError, match="etl may not manage on hr"):
        etl.create_table_transaction("hr.made_by_etl", SCHEMA).commit_transaction()
    with pytest.raises(ForbiddenError, match="etl may not read on ops"):
        etl.load_table("ops.t")
    with pytest.raises(ForbiddenError, match="etl may not manage on hr"):
        etl.rename_table("sales.made_by_etl", "hr.made_by_etl")
    assert platform.load_table("hr.t").metadata_location == before
    assert sorted(t for (_, t) in platform.list_tables("hr")) == ["t"]
    assert platform.load_table("sales.t").scan().to_arrow().num_rows == 5
