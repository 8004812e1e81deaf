"""Probe 5 — the version manifest, read from the running services and engines (compute, catalog, storage).

Each version is read from the thing itself: Trino's ``/v1/info`` and the Iceberg jars in its plugin
directory, PostgreSQL's ``SHOW server_version``, SeaweedFS's master ``/dir/status``, the REST fixture's
runtime jar on its process's classpath (or, a jar named without its version, the Iceberg build the jar
records), Kafka's and Flink's jars on their processes' classpaths, Spark's version and its Iceberg runtime's
``IcebergBuild.version()`` from the running JVM, PyIceberg's and DuckDB's (with its extensions). A service's
processes and files are read through the target (``support.control``): natively by pid on this host, in the
lab inside its container (its /proc, ``docker exec``, ``docker cp``).

Each is compared with the pin in ``version_manifest`` and with what the target declares it runs
(the spec's ``native_version``, the native artifacts it obtained; or ``native.versions`` when the
target exports it; what this host's clients run: ``clients.obtained_versions``). Rule: a version that differs from the pin but is what the target declares for
itself is a *deviation* (reported with its reason, not a failure); a version that differs from what
the target declares is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from platform_tests.support import control, engines
from platform_tests.support.stack import Stack, fail
from platform_tests.support.versions import declared_versions, read_fixture, read_kafka, trino_home

# Marked compute (engine and service upgrades are certified there); a failure names the layer of the
# component whose version is wrong.
pytestmark = [pytest.mark.compute, pytest.mark.safe]  # reads versions from the running services

VERSION = re.compile(r"\d+(?:\.\d+)+")


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


def first_version(text: str) -> str | None:
    match = VERSION.search(text or "")
    return match.group(0) if match else None


# --------------------------------------------------------------------------------------------------
# reading the running versions (what the target declares, and the readers through it: support.versions)
# --------------------------------------------------------------------------------------------------


def _http_json(url: str) -> dict:
    response = requests.get(url, timeout=10, headers={"Accept": "application/json"})
    response.raise_for_status()
    return response.json()


def read_trino(stack: Stack, ctl: control.ServiceControl | None) -> tuple[str | None, str, list[str]]:
    address = stack.endpoint("trino", "http")
    info = _http_json(f"http://{address}/v1/info")
    version = str(info.get("nodeVersion", {}).get("version"))
    jars: list[str] = []
    home = trino_home(ctl) if ctl is not None else None
    if ctl is not None and home:
        jars = sorted(name for name in ctl.list_dir("trino", f"{home}/plugin/iceberg")
                      if re.fullmatch(r"org\.apache\.iceberg_iceberg-.*\.jar", name))
    return version, f"GET http://{address}/v1/info", jars


def read_postgres(stack: Stack) -> tuple[str | None, str]:
    address = stack.endpoint("postgres", "pg")
    host, port = address.rsplit(":", 1)
    password = stack.credentials.get("postgres_password", "")
    try:
        import psycopg  # type: ignore[import-not-found]

        with psycopg.connect(host=host, port=int(port), user="postgres", password=password, dbname="postgres",
                             connect_timeout=10) as conn:
            value = conn.execute("SHOW server_version").fetchone()[0]
        return value, f"psycopg SHOW server_version @ {address}"
    except ImportError:
        pass
    argv0 = stack.service_record("postgres").get("argv0")
    psql = str(Path(argv0).with_name("psql")) if argv0 and Path(argv0).with_name("psql").exists() else shutil.which("psql")
    if not psql:
        raise RuntimeError("no PostgreSQL client: add psycopg[binary] to requirements.txt (or install psql)")
    done = subprocess.run([psql, "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-XAtc",
                           "SHOW server_version"], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"})
    if done.returncode != 0:
        raise RuntimeError(f"psql exited {done.returncode}: {done.stderr.strip()[:300]}")
    return done.stdout.strip(), f"psql SHOW server_version @ {address} (no Python driver in the venv)"


def read_seaweedfs(stack: Stack) -> tuple[str | None, str]:
    master = stack.endpoint("seaweedfs", "master")
    if master:
        try:
            status = _http_json(f"http://{master}/dir/status")
            if status.get("Version"):  # "30GB 4.53 7506e5f91cd6": build flavour, version, commit
                return first_version(status["Version"]), f"GET http://{master}/dir/status ({status['Version']})"
        except (requests.RequestException, ValueError):
            pass
    argv0 = stack.service_record("seaweedfs").get("argv0")
    if argv0:
        done = subprocess.run([argv0, "version"], capture_output=True, text=True, timeout=30)
        return first_version(done.stdout), f"{argv0} version ({done.stdout.strip()})"
    raise RuntimeError("no master endpoint answering /dir/status and no weed binary in the outputs")


def read_connect(stack: Stack) -> dict[str, tuple[str | None, str]]:
    """The worker's Kafka Connect version (``GET /``) and each plugin's (``GET /connector-plugins``)."""
    base = (stack.host_profiles.get("kafka_connect") or {}).get("url")
    if not base:
        raise RuntimeError("no profiles.host.kafka_connect in the outputs")
    worker = _http_json(f"{base}/")
    plugins = requests.get(f"{base}/connector-plugins", timeout=10).json()
    found = {"kafka connect in kafka-connect": (str(worker.get("version")), f"GET {base}/")}
    for plugin in plugins:
        if plugin["class"].startswith("io.debezium.connector.postgresql"):
            found["kafka-connect"] = (plugin["version"].removesuffix(".Final"), f"GET {base}/connector-plugins")
        if plugin["class"].startswith("org.apache.iceberg.connect"):
            found["iceberg-kafka-connect in kafka-connect"] = (plugin["version"], f"GET {base}/connector-plugins")
    return found


def read_flink(stack: Stack, ctl: control.ServiceControl | None) -> tuple[str | None, str, str | None]:
    """Flink's version from its REST API (``GET /config``), and the Iceberg runtime on the job manager's classpath."""
    rest = (stack.host_profiles.get("flink") or {}).get("rest")
    if not rest:
        raise RuntimeError("profiles.host.flink has no REST address")
    version = _http_json(f"{rest}/config").get("flink-version")
    iceberg = None
    if ctl is not None:
        cmdline = " ".join(p.args for p in ctl.processes("flink-jobmanager"))
        match = re.search(r"iceberg-flink-runtime-[0-9.]+-(\d+(?:\.\d+)+)\.jar", cmdline)
        iceberg = match.group(1) if match else None
    return version, f"GET {rest}/config", iceberg


def read_prometheus(stack: Stack) -> tuple[str | None, str]:
    address = stack.endpoint("prometheus", "http")
    session = requests.Session()
    session.trust_env = False
    info = session.get(f"http://{address}/api/v1/status/buildinfo", timeout=10).json()["data"]
    return first_version(info.get("version", "")), f"GET http://{address}/api/v1/status/buildinfo ({info.get('version')})"


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

    enabled = set((stack.outputs.get("endpoints") or {}).keys())
    # What runs inside a service (its processes, its files), read through the target where this host can.
    ctl, no_control = control.control_or_none(stack)
    if ctl is None:
        notes.append(f"the services' processes are not readable from here ({no_control}): the fixture's and "
                     "Kafka's versions, Trino's and Flink's Iceberg jars are not read")
    trino_jars: list[str] = []
    if "trino" in enabled:
        result = add("trino", layer_of(stack, "trino"), lambda: read_trino(stack, ctl))
        trino_jars = result[2] if result else []
    if "postgres" in enabled:
        add("postgres", layer_of(stack, "postgres"), lambda: read_postgres(stack))
    if "seaweedfs" in enabled:
        add("seaweedfs", layer_of(stack, "seaweedfs"), lambda: read_seaweedfs(stack))
    if "prometheus" in enabled:
        add("prometheus", layer_of(stack, "prometheus"), lambda: read_prometheus(stack))
    if "rest-fixture" in enabled and ctl is not None:
        add("rest-fixture", layer_of(stack, "rest-fixture"), lambda: read_fixture(ctl))
    if "kafka" in enabled and ctl is not None:
        add("kafka", layer_of(stack, "kafka"), lambda: read_kafka(ctl))
    if "kafka-connect" in enabled:
        try:
            for key, (running, source) in read_connect(stack).items():
                readings.append(Reading(key, layer_of(stack, "kafka-connect"), running, pins.get(key), source=source))
        except Exception as exc:  # noqa: BLE001
            readings.append(Reading("kafka-connect", layer_of(stack, "kafka-connect"), None, pins.get("kafka-connect"),
                                    status="unread", detail=str(exc)[:300]))
    if "flink-jobmanager" in enabled and (stack.host_profiles.get("flink") or {}).get("rest"):
        result = add("flink-jobmanager", layer_of(stack, "flink-jobmanager"), lambda: read_flink(stack, ctl))
        if result and result[2]:
            readings.append(Reading("iceberg in flink-jobmanager", "compute", result[2],
                                    pins.get("iceberg in flink-jobmanager"),
                                    source="iceberg-flink-runtime jar on the job manager's classpath"))
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

    if trino_jars:
        bundled = sorted({first_version(j) for j in trino_jars if first_version(j)})
        trino_running = next((r.running for r in readings if r.name == "trino"), "?")
        # Declared by the stack (services.trino.bundles / native_bundles), never taken from what is observed.
        readings.append(Reading("iceberg in trino", "compute", ",".join(bundled), pins.get("iceberg in trino"),
                                reason=f"an engine's Iceberg is whatever it ships: Trino {trino_running} declares "
                                       f"{pins.get('iceberg in trino')}", source="plugin/iceberg jar names"))

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
    if trino_jars:
        say("iceberg jars in Trino's plugin dir:")
        for jar in trino_jars:
            if any(k in jar for k in ("iceberg-api", "iceberg-aws", "iceberg-core")):
                say(f"  {jar}")
    say(f"duckdb extensions: {', '.join(f'{k}={v}' for k, v in duck.items() if k != 'duckdb')}")
    if "postgres" in enabled and not _has_psycopg():
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
