"""The Apache Iceberg REST fixture: the reference catalog, on file-backed SQLite (catalog layer).

The fixture is a test server. Its JDBC URI must be a file: an in-memory SQLite database is per
connection, so the second pooled connection sees an empty database (no such table: iceberg_tables).

Whole definition: defaults, the container (and its init job handing the bind mount to the image's
non-root user), the local process (the fixture's own classes behind a launcher that binds
127.0.0.1 only; upstream binds every interface), its role as a catalog, and the native artifact
(the shaded fixture jar from Maven Central plus the launcher compiled from
``tools/rest-fixture-launcher``). Refused on aws: it is a test server.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

from infra.artifacts import cache, java, maven
from infra.artifacts.recipe import Artifact, ArtifactError, ArtifactRecipe
from infra.paths import PROJECT_ROOT
from infra.services.base import (
    CatalogRole,
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    jvm_heap_flag,
    secret,
)
from infra.spec import Target

NAME = "rest-fixture"
INIT_JOB = "rest-fixture-init"
# The image's non-root user; the bind mount is handed to it by the init job below.
FIXTURE_UID = "1000:1000"
CATALOG_DIR = "/catalog"
# The host directory behind /catalog, under the stack's state; the fixture and its init job share it.
CATALOG_HOST_DIR = f"{NAME}/catalog"

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
    "heap": "384MiB",
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

LAUNCHER_SOURCE = PROJECT_ROOT / "tools" / "rest-fixture-launcher" / "LoopbackRESTCatalogServer.java"
UPSTREAM_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
LAUNCHER_MAIN = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"


def catalog_env(ctx: ServiceContext, s3_endpoint: str, jdbc_uri: str | None = None) -> dict[str, str]:
    """The fixture's CATALOG_* settings (it maps CATALOG_A__B_C to catalog property a-b.c).

    S3 credentials go in AWS_* (the default chain): the fixture logs every catalog property.
    """
    spec = ctx.spec
    return {
        "CATALOG_URI": jdbc_uri or spec.catalog.fixture_jdbc_uri,
        "CATALOG_WAREHOUSE": f"s3://{spec.storage.bucket}/",
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": s3_endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_JDBC_STRICT__MODE": "true",
        # One pooled connection: with two, commits right after a restart on an existing database
        # get 500 SQLITE_BUSY (database is locked); SQLite serialises writers anyway.
        "CATALOG_CLIENTS": "1",
        "AWS_REGION": spec.storage.region,
        "AWS_ACCESS_KEY_ID": secret("s3-access-key"),
        "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key"),
        # RESTCatalogServer reads catalog property rest.port (CATALOG_REST_PORT); the image's
        # REST_PORT only feeds its own HEALTHCHECK, which the targets replace.
        "CATALOG_REST_PORT": str(ctx.listen_port("http")),
    }


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The fixture with its SQLite file on a bind mount owned by the image's user."""
    env = catalog_env(ctx, ctx.url("seaweedfs", "s3"))
    env["JAVA_TOOL_OPTIONS"] = jvm_heap_flag(ctx.service)
    return ContainerPlan(env=env, bind_mounts={CATALOG_HOST_DIR: CATALOG_DIR}, user=FIXTURE_UID)


def init_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Runs as root once: create the catalog directory and give it to the fixture's user."""
    return ContainerPlan(
        command=["sh", "-c", f"mkdir -p {CATALOG_DIR} && chown -R {FIXTURE_UID} {CATALOG_DIR}"],
        bind_mounts={CATALOG_HOST_DIR: CATALOG_DIR},
        user="0:0",
    )


def sqlite_filename(ctx: ServiceContext) -> str:
    """The SQLite file's name in the spec's JDBC URI (``fixture.db``)."""
    return ctx.spec.catalog.fixture_jdbc_uri.split("?", 1)[0].rsplit("/", 1)[-1]


def native_jdbc_uri(ctx: ServiceContext, host: NativeHost) -> str:
    """The spec's SQLite file, moved from the container's /catalog into the service's home."""
    return f"jdbc:sqlite:file:{host.home / sqlite_filename(ctx)}"


def sqlite_file(ctx: ServiceContext, state_dir: Path) -> str:
    """Where the catalog's SQLite file is on the host: the native home, or the lab's bind mount."""
    if ctx.spec.target is Target.NATIVE:
        return str(state_dir / NAME / sqlite_filename(ctx))
    return str(state_dir / CATALOG_HOST_DIR / sqlite_filename(ctx))


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """The fixture's own classes behind the loopback launcher."""
    assert host.artifact is not None and host.java_home is not None and ctx.service.health is not None
    port = ctx.listen_port("http")
    env = catalog_env(ctx, ctx.url("seaweedfs", "s3"), native_jdbc_uri(ctx, host))
    env.update({"CATALOG_REST_HOST": "127.0.0.1", "CATALOG_REST_PORT": str(port), "JAVA_HOME": str(host.java_home)})
    classpath = ":".join(str(p) for p in host.artifact.classpath)
    assert host.artifact.main_class is not None
    return NativePlan(
        argv=[str(host.java_home / "bin" / "java"), jvm_heap_flag(ctx.service), "-XX:+ExitOnOutOfMemoryError",
              "-cp", classpath, host.artifact.main_class],
        env=env,
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=10.0,
    )


# -- native artifact: the shaded fixture from Maven Central + the loopback launcher --------------


def artifact_key(ctx: ServiceContext) -> str:
    launcher = hashlib.sha256(LAUNCHER_SOURCE.read_bytes()).hexdigest()[:12]
    return f"rest-fixture:{ctx.service.version}:launcher-{launcher}"


def fetch_fixture(ctx: ServiceContext) -> Artifact:
    """``org.apache.iceberg:iceberg-open-api:<version>`` (no classifier) is the shaded fixture runtime: the
    test fixtures with iceberg-core, iceberg-aws + AWS SDK (S3FileIO), sqlite-jdbc and Jetty in one jar."""
    version = ctx.service.version
    key = artifact_key(ctx)
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        coordinate = maven.Coordinate("org.apache.iceberg", "iceberg-open-api", version)
        jar = maven.fetch(coordinate)
        with zipfile.ZipFile(jar) as archive:
            names = set(archive.namelist())
        for needed in ("org/apache/iceberg/rest/RESTCatalogServer.class", "org/apache/iceberg/aws/s3/S3FileIO.class"):
            if needed not in names:
                raise ArtifactError(f"{jar} has no {needed}: not the fixture runtime jar")
        out_dir = cache.cache_root() / NAME / version
        launcher = java.compile_jar([LAUNCHER_SOURCE], [jar], out_dir / "loopback-launcher.jar")
        # Both files are recorded relative to one root: link the jar beside the launcher.
        link = out_dir / jar.name
        if not link.exists():
            link.symlink_to(os.path.relpath(jar, link.parent))
        files = {jar.name: cache.file_record(jar), launcher.name: cache.file_record(launcher)}
        entry = {
            "name": NAME, "requested": version, "version": version, "path": str(jar), "root": str(out_dir),
            "files": files, "sha256": files[jar.name]["sha256"], "classpath": [str(launcher), str(jar)],
            "main_class": LAUNCHER_MAIN, "source": coordinate.url,
            "notes": [f"upstream main {UPSTREAM_MAIN} binds 0.0.0.0; {LAUNCHER_MAIN} binds rest.host"],
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


SERVICES = (
    ServiceDefinition(
        name=INIT_JOB, default=INIT_JOB_DEFAULT, job_of=NAME, summary="hands the catalog bind mount to uid 1000",
        container=init_job, native_folded="the fixture's home is created for the user it runs as",
        unavailable={Target.AWS: "the REST fixture does not run on aws"},
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="reference REST catalog on file-backed SQLite",
        container=container, native=native, java=java.JAVA_FOR_JVM_SERVICES,
        unavailable={Target.AWS: "the REST fixture is a test server with SQLite behind it; use polaris or lakekeeper"},
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_fixture,
                                source="Maven Central iceberg-open-api + javac (tools/rest-fixture-launcher)"),
        catalog=CatalogRole(path="", engine_name="fixture", warehouse=lambda spec: f"s3://{spec.storage.bucket}/",
                            sqlite_file=sqlite_file),
    ),
)
