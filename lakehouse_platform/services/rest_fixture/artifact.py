"""The REST fixture's artifacts: iceberg-open-api's test fixture + the loopback launcher (javac), and PostgreSQL's
JDBC driver (Maven Central).
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

from lakehouse_platform.artifacts import cache, java, maven
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.rest_fixture.config import LAUNCHER_MAIN, NAME, POSTGRES_DRIVER

#: The loopback launcher's source, package data (compiled into the artifact by ``make artifacts``).
LAUNCHER_SOURCE = Path(__file__).with_name("launcher") / "LoopbackRESTCatalogServer.java"


UPSTREAM_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"


def artifact_key(ctx: ServiceContext) -> str:
    launcher = hashlib.sha256(LAUNCHER_SOURCE.read_bytes()).hexdigest()[:12]
    return f"rest-fixture:{ctx.service.version}:launcher-{launcher}:pg-{POSTGRES_DRIVER.version}"


def fetch_fixture(ctx: ServiceContext) -> Artifact:
    """``org.apache.iceberg:iceberg-open-api:<version>`` (no classifier) is the shaded fixture runtime: the
    test fixtures with iceberg-core, iceberg-aws + AWS SDK (S3FileIO), sqlite-jdbc and Jetty in one jar.
    PostgreSQL's JDBC driver joins the classpath (it is not in the jar), so either backend runs."""
    version = ctx.service.version
    key = artifact_key(ctx)

    def build() -> cache.Entry:
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
        return {
            "name": NAME, "requested": version, "version": version, "path": str(jar), "root": str(out_dir),
            "files": files, "sha256": files[jar.name]["sha256"], "classpath": [str(launcher), str(jar), str(driver)],
            "main_class": LAUNCHER_MAIN, "source": coordinate.url,
            "notes": [f"upstream main {UPSTREAM_MAIN} binds 0.0.0.0; {LAUNCHER_MAIN} binds rest.host"],
        }

    return cache.obtain(key, build)


def driver_key(ctx: ServiceContext) -> str:
    return POSTGRES_DRIVER.key


def fetch_driver(ctx: ServiceContext) -> Artifact:
    """PostgreSQL's JDBC driver for the lab's fixture container (uploaded beside the image's jar)."""
    maven.fetch(POSTGRES_DRIVER)
    return cache.artifact_from(cache.load_manifest()[POSTGRES_DRIVER.key])
