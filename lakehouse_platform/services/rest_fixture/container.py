"""The REST fixture on docker: the pinned image, its catalog bind mount handed to uid 1000 by the init job."""

from __future__ import annotations

from lakehouse_platform.services.capabilities import STORE
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, jvm_heap_flag
from lakehouse_platform.services.registry import needed
from lakehouse_platform.services.rest_fixture.artifact import UPSTREAM_MAIN
from lakehouse_platform.services.rest_fixture.config import (
    CATALOG_DIR,
    CATALOG_HOST_DIR,
    FIXTURE_UID,
    PGPASS,
    POSTGRES_DRIVER,
    catalog_env,
    on_postgres,
    pgpass_line,
)

# Where the image keeps the fixture (docker/iceberg-rest-fixture/Dockerfile at the pinned tag).
IMAGE_DIR = "/usr/lib/iceberg-rest"


IMAGE_JAR = "iceberg-rest-adapter.jar"
# Where the lab's built image keeps the driver (the service's lab Dockerfile).
BUILT_IMAGE_DRIVER = "postgresql.jar"


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The fixture with its SQLite file on a bind mount owned by the image's user.

    On PostgreSQL the image's ``java -jar`` cannot see the driver, so the command names the classpath
    (the image's jar plus the uploaded driver) and the upstream main class.
    """
    env = catalog_env(ctx, ctx.url(needed(ctx.spec, STORE, ctx.name), "s3"))
    env["JAVA_TOOL_OPTIONS"] = jvm_heap_flag(ctx.service)
    plan = ContainerPlan(env=env, bind_mounts={CATALOG_HOST_DIR: CATALOG_DIR}, user=FIXTURE_UID)
    if on_postgres(ctx.spec):
        assert host.artifact is not None
        # Beside the image's jar, not in the /catalog bind mount (the stack's state on the host); the lab's
        # built image carries the driver there already.
        env["PGPASSFILE"] = f"{IMAGE_DIR}/{PGPASS}"
        plan.uploads = {f"{IMAGE_DIR}/{PGPASS}": pgpass_line()}
        if ctx.spec.lab_built:
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
