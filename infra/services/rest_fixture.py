"""The Apache Iceberg REST fixture: the reference catalog, on file-backed SQLite or PostgreSQL (catalog layer).

The fixture is a test server. Its JDBC URI must be a file: an in-memory SQLite database is per
connection, so the second pooled connection sees an empty database (no such table: iceberg_tables).
With ``catalog.fixture_backend: postgres`` the same JDBC catalog keeps its pointers in database
``fixture`` of the platform's PostgreSQL instead (the driver rides beside the fixture jar; its
password comes from a pgpass file, because the fixture logs every catalog property).

Tables it creates get the platform's table defaults (``infra.operations.tables.PLATFORM_DEFAULTS``,
as ``table-default.*`` catalog properties): old metadata.json files are deleted after each commit.

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
from infra.operations.tables import PLATFORM_DEFAULTS
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
from infra.spec import PlatformSpec, Target

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

# The fixture on PostgreSQL: its database on the platform's server, the driver, the password file.
POSTGRES_DATABASE = "fixture"
POSTGRES_DRIVER = maven.Coordinate("org.postgresql", "postgresql", "42.7.8")
PGPASS = "pgpass"
# SQLite serialises writers, so one pooled connection (see catalog_env); PostgreSQL takes several.
POSTGRES_CLIENTS = 4

LAUNCHER_SOURCE = PROJECT_ROOT / "tools" / "rest-fixture-launcher" / "LoopbackRESTCatalogServer.java"
UPSTREAM_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
# Where the image keeps the fixture (docker/iceberg-rest-fixture/Dockerfile at the pinned tag).
IMAGE_DIR = "/usr/lib/iceberg-rest"
IMAGE_JAR = "iceberg-rest-adapter.jar"
# Where the lab's built image keeps the driver (docker/lab/rest-fixture.Dockerfile).
BUILT_IMAGE_DRIVER = "postgresql.jar"
LAUNCHER_MAIN = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"


def property_env(prop: str) -> str:
    """The CATALOG_* variable of a catalog property: the fixture reads CATALOG_A__B_C as a-b.c."""
    if "_" in prop:
        raise ValueError(f"{prop!r}: the fixture's environment cannot express a property with an underscore")
    return "CATALOG_" + prop.replace("-", "__").replace(".", "_").upper()


def table_default_env() -> dict[str, str]:
    """The platform's table defaults as the fixture's ``table-default.*`` catalog properties."""
    return {property_env(f"table-default.{key}"): value for key, value in PLATFORM_DEFAULTS.items()}


def postgres_jdbc_uri(pg_address: str) -> str:
    """The fixture's database on the platform's PostgreSQL; the password is in the pgpass file, not here."""
    return f"jdbc:postgresql://{pg_address}/{POSTGRES_DATABASE}?user=postgres"


def pgpass_line() -> str:
    """pgjdbc's pgpass format (host:port:database:user:password); any host, the fixture's database only."""
    return f"*:*:{POSTGRES_DATABASE}:postgres:{secret('postgres-password')}\n"


def on_postgres(spec: PlatformSpec) -> bool:
    return spec.catalog.fixture_backend == "postgres"


def catalog_env(ctx: ServiceContext, s3_endpoint: str, sqlite_uri: str | None = None) -> dict[str, str]:
    """The fixture's CATALOG_* settings (it maps CATALOG_A__B_C to catalog property a-b.c).

    The JDBC URI is the backend's: the platform's PostgreSQL, or SQLite at ``sqlite_uri`` (where this
    target puts the spec's file; default the spec's own URI). S3 credentials go in AWS_* (the default
    chain): the fixture logs every catalog property.
    """
    spec = ctx.spec
    if on_postgres(spec):
        jdbc_uri = postgres_jdbc_uri(ctx.address("postgres", "pg"))
    else:
        jdbc_uri = sqlite_uri or spec.catalog.fixture_jdbc_uri
    return {
        "CATALOG_URI": jdbc_uri,
        "CATALOG_WAREHOUSE": f"s3://{spec.storage.bucket}/",
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": s3_endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_JDBC_STRICT__MODE": "true",
        # One pooled connection on SQLite: with two, commits right after a restart on an existing
        # database get 500 SQLITE_BUSY (database is locked); SQLite serialises writers anyway.
        "CATALOG_CLIENTS": str(POSTGRES_CLIENTS if on_postgres(spec) else 1),
        **table_default_env(),
        "AWS_REGION": spec.storage.region,
        "AWS_ACCESS_KEY_ID": secret("s3-access-key"),
        "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key"),
        # RESTCatalogServer reads catalog property rest.port (CATALOG_REST_PORT); the image's
        # REST_PORT only feeds its own HEALTHCHECK, which the targets replace.
        "CATALOG_REST_PORT": str(ctx.listen_port("http")),
    }


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The fixture with its SQLite file on a bind mount owned by the image's user.

    On PostgreSQL the image's ``java -jar`` cannot see the driver, so the command names the classpath
    (the image's jar plus the uploaded driver) and the upstream main class.
    """
    env = catalog_env(ctx, ctx.url("seaweedfs", "s3"))
    env["JAVA_TOOL_OPTIONS"] = jvm_heap_flag(ctx.service)
    plan = ContainerPlan(env=env, bind_mounts={CATALOG_HOST_DIR: CATALOG_DIR}, user=FIXTURE_UID)
    if on_postgres(ctx.spec):
        assert host.artifact is not None
        # Beside the image's jar, not in the /catalog bind mount (the stack's state on the host); the lab's
        # built image carries the driver there already.
        env["PGPASSFILE"] = f"{IMAGE_DIR}/{PGPASS}"
        plan.uploads = {f"{IMAGE_DIR}/{PGPASS}": pgpass_line()}
        if ctx.spec.lab.images == "built":
            driver = f"{IMAGE_DIR}/{BUILT_IMAGE_DRIVER}"
        else:
            driver = f"{IMAGE_DIR}/{POSTGRES_DRIVER.filename}"
            plan.upload_sources = {driver: str(host.artifact.path)}
        plan.command = ["java", "-cp", f"{IMAGE_DIR}/{IMAGE_JAR}:{driver}", UPSTREAM_MAIN]
    return plan


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


def sqlite_file(ctx: ServiceContext, state_dir: Path) -> str | None:
    """Where the catalog's SQLite file is on the host: the native home, or the lab's bind mount (None on PostgreSQL)."""
    if on_postgres(ctx.spec):
        return None
    if ctx.spec.target is Target.NATIVE:
        return str(state_dir / NAME / sqlite_filename(ctx))
    return str(state_dir / CATALOG_HOST_DIR / sqlite_filename(ctx))


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """The fixture's own classes behind the loopback launcher."""
    assert host.artifact is not None and host.java_home is not None and ctx.service.health is not None
    port = ctx.listen_port("http")
    env = catalog_env(ctx, ctx.url("seaweedfs", "s3"), native_jdbc_uri(ctx, host))
    env.update({"CATALOG_REST_HOST": "127.0.0.1", "CATALOG_REST_PORT": str(port), "JAVA_HOME": str(host.java_home)})
    files = {}
    if on_postgres(ctx.spec):
        env["PGPASSFILE"] = str(host.home / PGPASS)
        files[str(host.home / PGPASS)] = pgpass_line()
    classpath = ":".join(str(p) for p in host.artifact.classpath)
    assert host.artifact.main_class is not None
    return NativePlan(
        files=files,
        argv=[str(host.java_home / "bin" / "java"), jvm_heap_flag(ctx.service), "-XX:+ExitOnOutOfMemoryError",
              "-cp", classpath, host.artifact.main_class],
        env=env,
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=10.0,
    )


# -- native artifact: the shaded fixture from Maven Central + the loopback launcher --------------


def artifact_key(ctx: ServiceContext) -> str:
    launcher = hashlib.sha256(LAUNCHER_SOURCE.read_bytes()).hexdigest()[:12]
    return f"rest-fixture:{ctx.service.version}:launcher-{launcher}:pg-{POSTGRES_DRIVER.version}"


def fetch_fixture(ctx: ServiceContext) -> Artifact:
    """``org.apache.iceberg:iceberg-open-api:<version>`` (no classifier) is the shaded fixture runtime: the
    test fixtures with iceberg-core, iceberg-aws + AWS SDK (S3FileIO), sqlite-jdbc and Jetty in one jar.
    PostgreSQL's JDBC driver joins the classpath (it is not in the jar), so either backend runs."""
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
        driver = maven.fetch(POSTGRES_DRIVER)
        out_dir = cache.cache_root() / NAME / version
        launcher = java.compile_jar([LAUNCHER_SOURCE], [jar], out_dir / "loopback-launcher.jar")
        # Every file is recorded relative to one root: link the jars beside the launcher.
        for linked in (jar, driver):
            link = out_dir / linked.name
            if not link.exists():
                link.symlink_to(os.path.relpath(linked, link.parent))
        files = {jar.name: cache.file_record(jar), launcher.name: cache.file_record(launcher),
                 driver.name: cache.file_record(driver)}
        entry = {
            "name": NAME, "requested": version, "version": version, "path": str(jar), "root": str(out_dir),
            "files": files, "sha256": files[jar.name]["sha256"], "classpath": [str(launcher), str(jar), str(driver)],
            "main_class": LAUNCHER_MAIN, "source": coordinate.url,
            "notes": [f"upstream main {UPSTREAM_MAIN} binds 0.0.0.0; {LAUNCHER_MAIN} binds rest.host"],
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


def driver_key(ctx: ServiceContext) -> str:
    return POSTGRES_DRIVER.key


def fetch_driver(ctx: ServiceContext) -> Artifact:
    """PostgreSQL's JDBC driver for the lab's fixture container (uploaded beside the image's jar)."""
    maven.fetch(POSTGRES_DRIVER)
    return cache.artifact_from(cache.load_manifest()[POSTGRES_DRIVER.key])


def check(spec: PlatformSpec) -> list[str]:
    """The fixture on PostgreSQL needs the platform's PostgreSQL, and gives up the SQLite backups."""
    if NAME not in spec.enabled_services() or not on_postgres(spec):
        return []
    problems = []
    if "postgres" not in spec.enabled_services():
        problems.append("catalog.fixture_backend: postgres keeps the fixture's pointers in the platform's PostgreSQL, "
                        "which this stack disables; enable services.postgres or use sqlite")
    if "catalog-backup" in spec.enabled_services():
        problems.append("catalog.fixture_backend: postgres is refused while services.catalog-backup is enabled: the "
                        "backups and the recovery drill restore the fixture's SQLite file; use sqlite, or disable "
                        "services.catalog-backup")
    return problems


SERVICES = (
    ServiceDefinition(
        name=INIT_JOB, default=INIT_JOB_DEFAULT, job_of=NAME, summary="hands the catalog bind mount to uid 1000",
        container=init_job, native_folded="the fixture's home is created for the user it runs as",
        unavailable={Target.AWS: "the REST fixture does not run on aws"},
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="reference REST catalog on file-backed SQLite",
        container=container, native=native, java=java.JAVA_FOR_JVM_SERVICES, check=check, after=("postgres",),
        unavailable={Target.AWS: "the REST fixture is a test server with SQLite behind it; use polaris or lakekeeper"},
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_fixture,
                                source="Maven Central iceberg-open-api + org.postgresql:postgresql + javac "
                                       "(tools/rest-fixture-launcher)"),
        lab_artifact=ArtifactRecipe(key=driver_key, fetch=fetch_driver,
                                    source="Maven Central org.postgresql:postgresql (the fixture on PostgreSQL)"),
        catalog=CatalogRole(path="", engine_name="fixture", warehouse=lambda spec: f"s3://{spec.storage.bucket}/",
                            sqlite_file=sqlite_file),
    ),
)
