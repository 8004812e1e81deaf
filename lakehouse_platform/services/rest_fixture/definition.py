"""The Apache Iceberg REST fixture: the reference catalog, on file-backed SQLite or PostgreSQL (catalog layer).

The fixture is a test server. Its JDBC URI must be a file: an in-memory SQLite database is per
connection, so the second pooled connection sees an empty database (no such table: iceberg_tables).
With ``catalog.fixture_backend: postgres`` the same JDBC catalog keeps its pointers in database
``fixture`` of the platform's PostgreSQL instead (the driver rides beside the fixture jar; its
password comes from a pgpass file, because the fixture logs every catalog property).

Tables it creates get the platform's table defaults (``lakehouse_platform.runtime.tables.PLATFORM_DEFAULTS``,
as ``table-default.*`` catalog properties): old metadata.json files are deleted after each commit.

Whole definition: defaults, the container (and its init job handing the bind mount to the image's
non-root user), the local process (the fixture's own classes behind a launcher that binds
127.0.0.1 only; upstream binds every interface), its role as a catalog, and the native artifact
(the shaded fixture jar from Maven Central plus the launcher compiled from
``lakehouse_platform/services/rest_fixture/launcher``). Refused on aws: it is a test server.
"""

from __future__ import annotations

from lakehouse_platform.artifacts import java
from lakehouse_platform.services.capabilities import DATABASE, REFERENCE_CATALOG
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    CatalogRole,
    Lazy,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    ServiceDefinition,
)
from lakehouse_platform.services.rest_fixture import container, image, native
from lakehouse_platform.services.rest_fixture.artifact import artifact_key, driver_key, fetch_driver, fetch_fixture
from lakehouse_platform.services.rest_fixture.config import (
    INIT_JOB,
    NAME,
    POSTGRES_DATABASE,
    check,
    on_postgres,
    sqlite_file,
)

DEFAULT = {
    "layer": "catalog",
    "role": "the reference REST catalog, on file-backed SQLite, on object storage",
    "version": "1.10.1",
    "image": "apache/iceberg-rest-fixture:1.10.1",
    # Internal only: clients reach the fixture through the catalog gate (it has no authentication of its own).
    "ports": {"http": {"internal": 8181}},
    "health": {"kind": "http", "port": "http", "path": "/v1/config",
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8181/v1/config >/dev/null"]},
    "memory": "512MiB",
    "heap": "256MiB",  # the catalog keeps no table metadata between requests
    # Disk: its SQLite catalog (a row per table) and its log.
    "disk": "256MiB",
    # The init job hands the bind mount to the fixture's user first (or SQLite cannot create its file).
    "depends_on": ["seaweedfs", "rest-fixture-init"],
}


INIT_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "hands the catalog bind mount to the fixture's non-root user (no SQLITE_CANTOPEN)",
    "version": "1.10.1",
    "image": "apache/iceberg-rest-fixture:1.10.1",
    "memory": "64MiB",
}


SERVICES = (
    ServiceDefinition(
        name=INIT_JOB, default=INIT_JOB_DEFAULT, job_of=NAME, summary="hands the catalog bind mount to uid 1000",
        docker=OnDocker(image=image.IMAGE, container=container.init_job),
        native=OnNative(folded="the fixture's home is created for the user it runs as"),
        aws=OnAws(unavailable="the REST fixture does not run on aws"),
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="reference REST catalog on file-backed SQLite", title="the REST fixture",
        docker=OnDocker(image=image.IMAGE, container=container.server,
                        lab_artifact=ArtifactRecipe(
                            key=driver_key, fetch=fetch_driver, needed=lambda ctx: on_postgres(ctx.spec),
                            source="Maven Central org.postgresql:postgresql (the fixture on PostgreSQL)")),
        native=OnNative(process=native.server, java=java.JAVA_FOR_JVM_SERVICES,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_fixture,
                                                source="Maven Central iceberg-open-api + org.postgresql:postgresql + "
                                                       "javac (lakehouse_platform/services/rest_fixture/launcher)")),
        aws=OnAws(unavailable="the REST fixture is a test server with SQLite behind it; use polaris"),
        check=check, after=(DATABASE,), databases=(POSTGRES_DATABASE,), provides=(REFERENCE_CATALOG,),
        probes=ProbeHooks(version=Lazy("lakehouse_platform.services.rest_fixture.probe:version"),
                          support="lakehouse_platform.services.rest_fixture.probe"),
        catalog=CatalogRole(path="", engine_name="fixture", warehouse=lambda spec: f"s3://{spec.storage.bucket}/",
                            sqlite_file=sqlite_file, tables_location=lambda spec: f"s3://{spec.storage.bucket}/"),
    ),
)
