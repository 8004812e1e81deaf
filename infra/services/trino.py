"""Trino: the distributed SQL engine in front of analysts, one catalog file per way to the tables (compute)."""

from __future__ import annotations

from infra.services.base import (
    ContainerPlan, NativeHost, NativePlan, ServiceContext, Side, jvm_heap_flag, properties, secret,
)

NAME = "trino"

DEFAULT = {
    "layer": "compute",
    "owner": "analytics engineering",
    "role": "distributed SQL engine with a native Iceberg connector",
    "version": "483",
    "native_version": "476",  # newest trino-server tarball on Maven Central
    "image": "trinodb/trino:483",
    "ports": {"http": {"internal": 8080, "external": 8080}},
    "health": {"kind": "http", "port": "http", "path": "/v1/info",
               "command": ["CMD", "/usr/lib/trino/bin/health-check"], "ready_timeout_s": 240},
    "memory": "2GiB",
    "heap": "1GiB",
    # No start-up dependency: Trino resolves catalogs lazily, and on aws the store is S3 itself.
}

# Trino catalog name -> the catalog service it reaches the tables through.
CATALOGS = {"fixture": "rest-fixture", "polaris": "polaris", "lakekeeper": "lakekeeper"}


def catalog_files(ctx: ServiceContext, side: Side = Side.INTERNAL) -> dict[str, str]:
    """One Iceberg catalog properties file per enabled catalog service.

    Credentials are read from Trino's environment (`${ENV:...}`), so the files hold no secret.
    """
    spec = ctx.spec
    enabled = spec.enabled_services()
    store = {
        "fs.native-s3.enabled": "true",
        "s3.endpoint": ctx.url("seaweedfs", "s3", side) if "seaweedfs" in enabled else f"https://s3.{spec.storage.region}.amazonaws.com",
        "s3.path-style-access": "true" if "seaweedfs" in enabled else "false",
        "s3.region": spec.storage.region,
    }
    if "seaweedfs" in enabled:
        store["s3.aws-access-key"] = "${ENV:S3_ACCESS_KEY}"
        store["s3.aws-secret-key"] = "${ENV:S3_SECRET_KEY}"
    files: dict[str, str] = {}
    for catalog, service in CATALOGS.items():
        if service not in enabled:
            continue
        props = {"connector.name": "iceberg", "iceberg.catalog.type": "rest"}
        if service == "rest-fixture":
            props["iceberg.rest-catalog.uri"] = ctx.url(service, "http", side)
            props["iceberg.rest-catalog.warehouse"] = f"s3://{spec.storage.bucket}/"
        elif service == "polaris":
            props["iceberg.rest-catalog.uri"] = ctx.url(service, "http", side, "/api/catalog")
            props["iceberg.rest-catalog.warehouse"] = spec.catalog.warehouse
            props["iceberg.rest-catalog.security"] = "OAUTH2"
            props["iceberg.rest-catalog.oauth2.credential"] = "root:${ENV:POLARIS_ROOT_SECRET}"
            props["iceberg.rest-catalog.oauth2.scope"] = "PRINCIPAL_ROLE:ALL"
            props["iceberg.rest-catalog.vended-credentials-enabled"] = "true"
        else:
            props["iceberg.rest-catalog.uri"] = ctx.url(service, "http", side, "/catalog")
            props["iceberg.rest-catalog.warehouse"] = spec.catalog.warehouse
            props["iceberg.rest-catalog.vended-credentials-enabled"] = "true"
        props.update(store)
        files[f"{catalog}.properties"] = properties(props)
    return files


def config_properties(ctx: ServiceContext, port: int, discovery_host: str = "localhost") -> str:
    """A single-node coordinator that also schedules work on itself."""
    return properties({
        "coordinator": "true",
        "node-scheduler.include-coordinator": "true",
        "http-server.http.port": port,
        "discovery.uri": f"http://{discovery_host}:{port}",
        "query.max-memory": "512MB",
        "query.max-memory-per-node": "512MB",
    })


def node_properties(data_dir: str) -> str:
    """Natively the HTTP server binds loopback only (node.bind-ip; Trino has no http host property)."""
    return properties({
        "node.environment": "lab",
        "node.id": "native-coordinator",
        "node.data-dir": data_dir,
        "node.bind-ip": "127.0.0.1",
        "node.internal-address": "127.0.0.1",
    })


def jvm_config(ctx: ServiceContext) -> str:
    """JVM flags with an explicit heap (the container limit is the budget, the heap stays below it)."""
    flags = [
        "-server", jvm_heap_flag(ctx.service), "-XX:InitialRAMPercentage=10", "-XX:+ExitOnOutOfMemoryError",
        "-XX:+UseG1GC", "-XX:G1HeapRegionSize=32M", "-XX:+ExplicitGCInvokesConcurrent",
        "-XX:ReservedCodeCacheSize=256M", "-Djdk.attach.allowAttachSelf=true", "-Dfile.encoding=UTF-8",
        "-XX:+EnableDynamicAgentLoading", "-XX:-OmitStackTraceInFastThrow", "-Djdk.nio.maxCachedBufferSize=2000000",
        "--enable-native-access=ALL-UNNAMED",
    ]
    return "\n".join(flags) + "\n"


def secret_env(ctx: ServiceContext) -> dict[str, str]:
    """The credentials Trino's catalog files read from the environment."""
    env = {}
    if "seaweedfs" in ctx.spec.enabled_services():
        env.update({"S3_ACCESS_KEY": secret("s3-access-key"), "S3_SECRET_KEY": secret("s3-secret-key")})
    if "polaris" in ctx.spec.enabled_services():
        env["POLARIS_ROOT_SECRET"] = secret("polaris-root-secret")
    return env


def container(ctx: ServiceContext) -> ContainerPlan:
    uploads = {f"/etc/trino/catalog/{name}": body for name, body in catalog_files(ctx, Side.INTERNAL).items()}
    uploads["/etc/trino/jvm.config"] = jvm_config(ctx)
    uploads["/etc/trino/config.properties"] = config_properties(ctx, ctx.listen_port("http"))
    return ContainerPlan(env=secret_env(ctx), uploads=uploads)


# Trino demands at least 4096 open files (8192 recommended); natively the soft limit is raised to
# the hard limit, which even root may not raise on some hosts.
MIN_OPEN_FILES = 4096


def native(ctx: ServiceContext, host: NativeHost, open_files_hard_limit: int) -> NativePlan:
    """`bin/launcher run` execs the JVM itself: one pid to stop, no orphans. Never `-v` (prints env)."""
    port = ctx.listen_port("http")
    etc, data = host.home / "etc", host.home / "data"
    files = {str(etc / "catalog" / name): body for name, body in catalog_files(ctx, Side.INTERNAL).items()}
    files.update({
        str(etc / "node.properties"): node_properties(str(data)),
        str(etc / "jvm.config"): jvm_config(ctx),
        str(etc / "config.properties"): config_properties(ctx, port, "127.0.0.1"),
        str(etc / "log.properties"): "io.trino=INFO\n",
    })
    return NativePlan(
        argv=[str(host.artifact.path / "bin" / "launcher"), "run", f"--etc-dir={etc}", f"--data-dir={data}"],
        env={**secret_env(ctx), "JAVA_HOME": str(host.java_home)},
        files=files,
        health={"kind": "http", "url": ctx.url(NAME, "http", path="/v1/info"), "expect_status": 200,
                "json_field": "starting", "json_expect": False},
        ulimit_nofile=max(MIN_OPEN_FILES, min(open_files_hard_limit, 65536)),
        stop_grace_s=20.0,
    )
