"""The REST fixture natively: the fixture jar with the loopback launcher, its SQLite file under the service's home."""

from __future__ import annotations

from lakehouse_platform.services.capabilities import STORE
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import IDLE_HEAP_FLAGS, NativeHost, NativePlan, jvm_heap_flag
from lakehouse_platform.services.registry import needed
from lakehouse_platform.services.rest_fixture.config import (
    NAME,
    PGPASS,
    catalog_env,
    on_postgres,
    pgpass_line,
    sqlite_filename,
)


def native_jdbc_uri(ctx: ServiceContext, host: NativeHost) -> str:
    """The spec's SQLite file, moved from the container's /catalog into the service's home."""
    return f"jdbc:sqlite:file:{host.home / sqlite_filename(ctx)}"


def server(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """The fixture's own classes behind the loopback launcher."""
    assert host.artifact is not None and host.java_home is not None and ctx.service.health is not None
    port = ctx.listen_port("http")
    env = catalog_env(ctx, ctx.url(needed(ctx.spec, STORE, ctx.name), "s3"), native_jdbc_uri(ctx, host))
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
              *IDLE_HEAP_FLAGS,
              "-cp", classpath, host.artifact.main_class],
        env=env,
        health={"kind": "http", "url": ctx.url(NAME, "http", path=ctx.service.health.path), "expect_status": 200},
        stop_grace_s=10.0,
    )
