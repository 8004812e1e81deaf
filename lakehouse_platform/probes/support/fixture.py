"""A throwaway REST fixture for control experiments (e.g. Book 1's in-memory SQLite URI).

A process on this host, next to the stack's store (natively on loopback; the lab's published port).
Started exactly as the native target starts the platform's fixture: the cached fixture runtime jar
plus the loopback launcher (``artifacts.ensure_rest_fixture``: classpath + main class) on a JDK >= 17,
configured through ``CATALOG_*`` variables, through ``local_service`` (detached, pid + create_time
recorded), on a free loopback port with ``-Xmx256m``; stopped by that pid.
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakehouse_platform.probes.support import services
from lakehouse_platform.probes.support.stack import Stack
from lakehouse_platform.services.capabilities import DATABASE, REFERENCE_CATALOG

IN_MEMORY_URI = "jdbc:sqlite:file:/tmp/iceberg_rest_{tag}?mode=memory"  # Book 1's URI, made unique per run


@dataclass
class RunningFixture:
    uri: str
    port: int
    pid: int
    log_file: str
    jdbc_uri: str


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def throwaway_fixture(stack: Stack, jdbc_uri: str, heap: str = "-Xmx256m",
                      extra_env: dict[str, str] | None = None, tag: str = "",
                      files: dict[str, str] | None = None) -> Iterator[RunningFixture]:
    """A fixture on ``jdbc_uri`` (``{work}`` = its temporary directory) whose tables live under
    ``s3://<bucket>/_probes/fixture-<tag>/``; every object written there is deleted afterwards (an
    in-memory catalog forgets its tables, so nothing else would ever clean them up).

    It gets the platform's table defaults, as the stack's fixture does; ``files`` (paths may use
    ``{work}``) are written before it starts, mode 0600."""
    from lakehouse_platform.targets.native import local_service as ls

    reference = services.support(REFERENCE_CATALOG)  # the reference catalog's own probe support (the fixture's)
    if reference is None:
        pytest.skip("no service of the registry is Iceberg's reference catalog")
    build = reference.native_build(stack.outputs)
    if build is None and stack.target == "docker":
        # The lab's store is published on this host: the control runs the fixture build the native target runs,
        # from this host's artifact cache (the lab's built fixture image is made of it), as a local process: the
        # default native platform's (the registry's pins), whatever stack files the project has.
        from lakehouse_platform.config import target_defaults

        build = reference.runtime(target_defaults("native"))
        if build is None:
            pytest.skip("the control fixture runs the fixture build from this host's artifact cache, which has none "
                        "(make artifacts), or no JDK >= 17 is found")
    elif build is None:
        pytest.skip(f"the control fixture runs the stack's own fixture build: a native stack with {reference.NAME}")
    fixture = {"classpath": list(build.classpath), "main_class": build.main_class}
    java_bin = build.java
    props = stack.host_profiles.get("pyiceberg") or {}
    creds = stack.credentials
    port = free_port()
    tag = tag or str(port)
    bucket = stack.bucket
    prefix = f"_probes/fixture-{tag}/"
    with tempfile.TemporaryDirectory(prefix="probe-fixture-") as work:
        jdbc_uri = jdbc_uri.replace("{work}", work)
        env = {key: value.replace("{work}", work) for key, value in (extra_env or {}).items()}
        spec = ls.ServiceInputs(
            service="probe-control-fixture",
            argv=[str(java_bin), heap, "-XX:+ExitOnOutOfMemoryError",
                  "-cp", ":".join(fixture["classpath"]), str(fixture["main_class"])],
            cwd=work, data_dir=str(Path(work) / "data"), log_file=str(Path(work) / "fixture.log"),
            env={
                "CATALOG_URI": jdbc_uri,
                "CATALOG_WAREHOUSE": f"s3://{bucket}/{prefix}",
                "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
                "CATALOG_S3_ENDPOINT": props.get("s3.endpoint", ""),
                "CATALOG_S3_PATH__STYLE__ACCESS": props.get("s3.path-style-access", "true"),
                "CATALOG_JDBC_STRICT__MODE": "true",
                "CATALOG_REST_HOST": "127.0.0.1",
                "CATALOG_REST_PORT": str(port),
                "AWS_REGION": props.get("s3.region", "us-east-1"),
                "AWS_ACCESS_KEY_ID": creds.get("s3_access_key", ""),
                "AWS_SECRET_ACCESS_KEY": creds.get("s3_secret_key", ""),
                **reference.table_default_env(),
                **env,
            },
            files={path.replace("{work}", work): body for path, body in (files or {}).items()},
            health={"kind": "http", "url": f"http://127.0.0.1:{port}/v1/config"},
            ports=[port], health_timeout_s=90, stop_grace_s=5,
        )
        record = ls.start_service(spec)
        try:
            yield RunningFixture(uri=f"http://127.0.0.1:{port}", port=port, pid=record.pid,
                                 log_file=spec.log_file, jdbc_uri=jdbc_uri)
        finally:
            ls.stop_service(spec, record)
            delete_prefix(stack, bucket, prefix)


@contextlib.contextmanager
def postgres_fixture(stack: Stack, tag: str) -> Iterator[RunningFixture]:
    """A fixture on the platform's PostgreSQL as ``catalog.fixture_backend: postgres`` configures it (the JDBC
    URI, pooled connections and pgpass of the fixture's package), under a catalog name of its own.

    Its database ``fixture`` is one the fixture declares (``ServiceDefinition.databases``), which the platform's
    database creates after every start."""
    reference = services.support(REFERENCE_CATALOG)
    database = services.provider(stack, DATABASE)
    pg = stack.endpoint(database, "pg") if database else None  # as this host reaches it (the lab: its published port)
    if reference is None or pg is None or (
            stack.target == "native" and database not in (stack.native.get("artifacts") or {})):
        pytest.skip("the fixture on PostgreSQL needs the platform's PostgreSQL, reachable from this host")
    jdbc_uri, env, pgpass = reference.on_postgres(pg, stack.credentials["postgres_password"],
                                                  f"run_{tag.replace('-', '_')}")
    with throwaway_fixture(stack, jdbc_uri, heap="-Xmx384m", extra_env=env, tag=tag,
                           files={"{work}/pgpass": pgpass}) as fixture:
        yield fixture


def table_prefix(location: str) -> tuple[str, str] | None:
    """``(bucket, key prefix)`` of everything under a table's ``s3://`` location: the prefix ends with ``/``, so a
    sibling whose name starts the same (``orders`` and ``orders_cdc``) is not under it; None for a bucket root."""
    bucket, _, key = location.removeprefix("s3://").partition("/")
    key = key.strip("/")
    return (bucket, f"{key}/") if location.startswith("s3://") and bucket and key else None


def delete_prefix(stack: Stack, bucket: str, prefix: str) -> int:
    """Delete every object under ``prefix`` (bounded: a control run writes a few hundred)."""
    s3 = stack.s3()
    deleted = 0
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            for start in range(0, len(keys), 500):
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys[start:start + 500], "Quiet": True})
                deleted += len(keys[start:start + 500])
    except Exception:  # noqa: BLE001 - cleanup is best effort
        pass
    return deleted
