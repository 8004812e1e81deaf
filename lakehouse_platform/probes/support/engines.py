"""The host's engines as the probes drive them: Spark, PyIceberg, DuckDB, each from the profiles. The engine
services (Trino) are their packages' own (``ProbeHooks.engine``), found through ``support.services``.

Spark runs as ``local[1]`` with an explicit driver heap and exactly the two Iceberg jars the target
provides (``clients.spark_jars``); its catalog ``lab`` is configured from ``profiles.host.spark`` plus
the credentials. DuckDB loads its extensions from the packages' paths (no download) and runs the
profile's SECRET/ATTACH statements.
"""

from __future__ import annotations

import os
import re
import threading

from lakehouse_platform.probes.support.stack import Stack

SPARK_DRIVER_MEMORY = os.environ.get("PROBE_SPARK_DRIVER_MEMORY", "1g")
SPARK_CATALOG = "lab"
#: The host's Spark client as the probes name it (``profiles.host.spark``); not the spark service (EMR on aws).
SPARK = "spark"  # not the service: the host's Spark client
# Keys of the Spark profile that are notes for people, not Spark settings.

_spark_lock = threading.Lock()
_spark = None


def spark_catalog_conf(stack: Stack, identity: str | None = None, name: str = SPARK_CATALOG) -> dict[str, str]:
    """The profile's Spark catalog settings as ``identity``, for a catalog called ``name``."""
    profile = stack.fill(stack.host_profiles.get(SPARK) or {}, identity)
    prefix, wanted = f"spark.sql.catalog.{SPARK_CATALOG}", f"spark.sql.catalog.{name}"
    return {(wanted + k[len(prefix):] if k.startswith(prefix) else k): str(v) for k, v in profile.items()}


def spark_conf(stack: Stack) -> dict[str, str]:
    """``profiles.host.spark`` as the profile's identity + the local settings of a probe session."""
    conf = spark_catalog_conf(stack)
    conf.update({
        "spark.master": "local[1]",
        "spark.driver.memory": SPARK_DRIVER_MEMORY,
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        # Exactly the target's two Iceberg jars; no spark.jars.packages, so no Ivy and no network.
        "spark.jars": ",".join(stack.spark_jars()),
    })
    return conf


def spark_session(stack: Stack):
    """The probe run's one SparkSession (a JVM per pytest process), created on first use."""
    global _spark
    with _spark_lock:
        if _spark is not None:
            return _spark
        java_home = stack.java_home()
        if java_home:
            os.environ["JAVA_HOME"] = java_home
        os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(f"platform-probe-{stack.run_id}")
        for key, value in spark_conf(stack).items():
            builder = builder.config(key, value)
        _spark = builder.getOrCreate()
        _spark.sparkContext.setLogLevel("ERROR")
        return _spark


def spark_running():
    return _spark


def stop_spark() -> None:
    global _spark
    with _spark_lock:
        if _spark is not None:
            _spark.stop()
            _spark = None


def spark_driver_pid() -> int | None:
    """Pid of the Spark driver JVM (the py4j gateway child of this process), when running."""
    if _spark is None:
        return None
    try:
        return int(_spark.sparkContext._gateway.proc.pid)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return None


def duckdb_connect(stack: Stack, writable: bool = False, identity: str | None = None):
    """``(connection, notes)``: DuckDB with the catalog attached as ``lab`` from the profile.

    ``writable``: DuckDB attaches a catalog whose path is a remote URL (``'s3://warehouse/'``) read-only
    unless ``READ_ONLY false`` is given; when the profile does not say, the probe adds it and says so.
    """
    import duckdb

    con = duckdb.connect()
    notes = []
    for statement in stack.duckdb_statements(identity=identity):
        if writable and statement.lstrip().upper().startswith("ATTACH") and "READ_ONLY" not in statement.upper():
            statement = re.sub(r"\)\s*$", ", READ_ONLY false)", statement.rstrip())
            notes.append("profiles.host.duckdb ATTACH has no READ_ONLY false: DuckDB attaches an s3:// path "
                         "read-only (remote path, access_mode automatic); the probe added it to write")
        con.execute(statement)
    return con, notes


def duckdb_versions(con) -> dict[str, str]:
    import duckdb

    versions = {"duckdb": duckdb.__version__}
    for name, version in con.execute(
        "SELECT extension_name, extension_version FROM duckdb_extensions() WHERE loaded AND extension_name IN "
        "('iceberg', 'httpfs', 'avro')"
    ).fetchall():
        versions[f"duckdb-ext-{name}"] = version
    return versions
