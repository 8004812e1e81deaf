"""Probe 5 — the version manifest, read from the running services and engines (compute, catalog, storage).

Each version is read from the thing itself, each service by its own package (``ProbeHooks.version``, asked of
every service the stack runs): e.g. Trino's ``/v1/info`` and the Iceberg jars in its plugin directory,
PostgreSQL's ``SHOW server_version``, SeaweedFS's master ``/dir/status``, the REST fixture's runtime jar on its
process's classpath (or, a jar named without its version, the Iceberg build the jar records), Kafka's and
Flink's jars on their processes' classpaths; and here the host's engines: Spark's version and its Iceberg
runtime's ``IcebergBuild.version()`` from the running JVM, PyIceberg's and DuckDB's (with its extensions). A
service's processes and files are read through the target (``support.control``): natively by pid on this
host, in the lab inside its container (its /proc, ``docker exec``, ``docker cp``).

Each is compared with the pin in ``version_manifest`` and with what the target declares it runs
(the spec's ``native_version``, the native artifacts it obtained; or ``native.versions`` when the
target exports it; what this host's clients run: ``clients.obtained_versions``). Rule: a version that differs from the pin but is what the target declares for
itself is a *deviation* (reported with its reason, not a failure); a version that differs from what
the target declares is a failure.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lakehouse_platform.probes.support import control, engines, services
from lakehouse_platform.probes.support.stack import Stack, fail
from lakehouse_platform.probes.support.versions import declared_versions
from lakehouse_platform.services.capabilities import DATABASE

# Marked compute (engine and service upgrades are certified there); a failure names the layer of the
# component whose version is wrong.
pytestmark = [pytest.mark.compute, pytest.mark.safe]  # reads versions from the running services

@dataclass
class Reading:
    name: str
    layer: str
    running: str | None
    pin: str | None
    declared: str | None = None
    reason: str = ""
    source: str = ""
    status: str = ""
    detail: str = ""


def matches(running: str | None, expected: str | None) -> bool:
    if not running or not expected:
        return False
    return running == expected or running.startswith((expected + ".", expected + " "))


# --------------------------------------------------------------------------------------------------
# reading the running versions: each service's package reads its own (ProbeHooks.version), the host's engines here
# --------------------------------------------------------------------------------------------------


def read_spark(stack: Stack) -> tuple[str, str]:
    spark = engines.spark_running() or engines.spark_session(stack)
    iceberg = str(spark.sparkContext._jvm.org.apache.iceberg.IcebergBuild.version())
    return spark.version, iceberg


# --------------------------------------------------------------------------------------------------


def layer_of(stack: Stack, service: str, default: str = "compute") -> str:
    for row in stack.outputs.get("ownership") or []:
        if service in (row.get("services") or {}):
            return row["layer"]
    return default


def test_version_manifest_matches_the_pins(stack: Stack, figure, say):
    pins = stack.version_manifest
    declared = declared_versions(stack)
    readings: list[Reading] = []
    notes: list[str] = []

    def add(name: str, layer: str, reader, pin_key: str | None = None):
        pin = pins.get(pin_key or name)
        try:
            result = reader()
            running, source = result[0], result[1]
        except Exception as exc:  # noqa: BLE001
            readings.append(Reading(name, layer, None, pin, source="", status="unread", detail=str(exc)[:300]))
            return None
        readings.append(Reading(name, layer, running, pin, source=source))
        return result

    # What runs inside a service (its processes, its files), read through the target where this host can.
    ctl, no_control = control.control_or_none(stack)
    if ctl is None:
        notes.append(f"the services' processes are not readable from here ({no_control}): versions read from inside a "
                     "service (a classpath, a plugin directory) are not read")
    for definition in services.definitions(stack):  # each service reads its own running version (its package's)
        if definition.probes.version is None:
            continue
        layer = layer_of(stack, definition.name)
        try:
            found = definition.probes.version(stack, ctl)
        except Exception as exc:  # noqa: BLE001
            readings.append(Reading(definition.name, layer, None, pins.get(definition.name), source="",
                                    status="unread", detail=str(exc)[:300]))
            continue
        for key, reading in found.items():
            readings.append(Reading(key, layer, reading.running, pins.get(key), reason=reading.reason,
                                    source=reading.source))
    spark_version, spark_iceberg = read_spark(stack)
    readings.append(Reading("pyspark", "compute", spark_version, pins.get("pyspark"), source="SparkSession.version"))
    readings.append(Reading("iceberg", "compute", spark_iceberg, pins.get("iceberg"),
                            source="IcebergBuild.version() in the Spark JVM (iceberg-spark-runtime)"))
    import duckdb
    import pyiceberg

    readings.append(Reading("pyiceberg", "compute", pyiceberg.__version__, pins.get("pyiceberg"),
                            source="pyiceberg.__version__"))
    con, _ = engines.duckdb_connect(stack)
    duck = engines.duckdb_versions(con)
    con.close()
    readings.append(Reading("duckdb", "compute", duckdb.__version__, pins.get("duckdb"), source="duckdb.__version__"))

    for reading in readings:
        decl = declared.get(reading.name)
        if reading.declared is None and decl:
            reading.declared, reading.reason = decl
        if reading.status == "unread":
            continue
        declared_list = [d for d in (reading.declared or "").split(",") if d]
        if matches(reading.running, reading.pin):
            reading.status = "ok"  # running the pin is never a problem, whatever else was declared
        elif declared_list and (reading.running == reading.declared
                                or any(matches(reading.running, d) for d in declared_list)):
            reading.status = "deviation"
        else:
            reading.status = "FAIL"
            reading.detail = (f"running {reading.running}, pin {reading.pin}"
                              + (f", target declares {reading.declared}" if reading.declared else ""))

    say("== version manifest")
    for r in readings:
        shown = r.running if r.running is not None else "?"
        extra = ""
        if r.status == "deviation":
            extra = f"   (pin {r.pin}; deviation: {r.reason})"
        elif r.status == "ok" and r.reason and r.reason != "obtained by the native target":
            extra = f"   ({r.reason})"
        elif r.status != "ok":
            extra = f"   [{r.status}: {r.detail}]"
        say(f"{r.name} {shown}{extra}")
    say(f"duckdb extensions: {', '.join(f'{k}={v}' for k, v in duck.items() if k != 'duckdb')}")
    if services.provider(stack, DATABASE) and not _has_psycopg():
        notes.append("PostgreSQL read with psql: add psycopg[binary] to requirements.txt for a Python driver")
    for note in notes:
        say(f"== note: {note}")

    tally = {s: sum(r.status == s for r in readings) for s in ("ok", "deviation", "FAIL", "unread")}
    figure(", ".join(f"{n} {s}" for s, n in tally.items() if n) + "; deviations: "
           + (", ".join(f"{r.name} {r.running} vs {r.pin}" for r in readings if r.status == "deviation") or "none"))
    bad = [r for r in readings if r.status in ("FAIL", "unread")]
    if bad:
        layer = bad[0].layer
        fail(stack, layer, f"{len(bad)} running version(s) differ from what the target declares or cannot be read",
             [{"component": r.name, "layer": r.layer, "running": r.running, "pin": r.pin, "declared": r.declared,
               "status": r.status, "detail": r.detail, "source": r.source} for r in bad])


def _has_psycopg() -> bool:
    try:
        import psycopg  # type: ignore[import-not-found]  # noqa: F401

        return True
    except ImportError:
        return False
