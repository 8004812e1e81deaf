"""Trino: the distributed SQL engine in front of analysts, one catalog file per way to the tables (compute).

Whole definition: defaults, the catalog files (one per enabled catalog service, from each catalog's
``CatalogRole``), the node/config/JVM files for every role it runs in (a single-node coordinator
on docker and native; coordinator and workers on aws), the container, the local process, the ECS
coordinator, and the native artifact (the trino-server tarball from Maven Central, plugins pruned).
"""

from __future__ import annotations

import resource
import shutil
from pathlib import Path
from typing import Literal

from infra.artifacts import archive, cache, maven
from infra.artifacts.recipe import Artifact, ArtifactRecipe
from infra.operations import tables as declared_tables
from infra.services.base import (
    ContainerHost,
    ContainerPlan,
    EcsPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    Side,
    properties,
    secret,
)
from infra.services.registry import registry
from infra.spec import parse_size

NAME = "trino"

DEFAULT = {
    "layer": "compute",
    "owner": "analytics engineering",
    "role": "distributed SQL engine with a native Iceberg connector",
    "version": "483",
    "native_version": "476",  # newest trino-server tarball on Maven Central
    # Read from plugin/iceberg: 483 ships iceberg-core 1.11.0 (the chapter), 476 ships 1.9.1.
    "bundles": {"iceberg": "1.11.0"},
    "native_bundles": {"iceberg": "1.9.1"},
    "image": "trinodb/trino:483",
    "ports": {"http": {"internal": 8080, "external": 8080}},
    "health": {"kind": "http", "port": "http", "path": "/v1/info",
               "command": ["CMD", "/usr/lib/trino/bin/health-check"], "ready_timeout_s": 240},
    "memory": "2GiB",
    "heap": "1GiB",
    # Waits for each enabled catalog's setup job (uses_catalogs); nothing else: Trino resolves
    # catalogs lazily, and on aws the store is S3 itself.
}

#: Java major Trino 476+ needs.
JAVA = 24
#: Trino plugins kept after unpacking natively; the server starts with only these.
PLUGINS = ("iceberg",)
#: The image's launcher (the ECS task writes its files, then execs it).
IMAGE_LAUNCHER = "/usr/lib/trino/bin/run-trino"
IMAGE_ETC = "/etc/trino"
# Trino demands at least 4096 open files (8192 recommended); natively the soft limit is raised to
# the hard limit, which even root may not raise on some hosts.
MIN_OPEN_FILES = 4096


#: The first release read here with ``fs.s3.enabled`` (trino-filesystem-manager-483.jar:
#: ``FileSystemConfig.setS3Enabled`` is ``@Config("fs.s3.enabled")``, ``@LegacyConfig("fs.native-s3.enabled")``);
#: 476's jar knows only ``fs.native-s3.enabled``. Older releases keep the old name, which 483 still accepts.
S3_SWITCH_RENAMED_IN = 483


def s3_switch(version: str) -> str:
    """The property that turns on Trino's native S3 file system, in the name ``version`` knows."""
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else S3_SWITCH_RENAMED_IN
    return "fs.s3.enabled" if major >= S3_SWITCH_RENAMED_IN else "fs.native-s3.enabled"


def store_properties(ctx: ServiceContext, side: Side) -> dict[str, str]:
    """How Trino reaches table files: the lab store with keys from the environment, or S3 itself."""
    spec = ctx.spec
    switch = s3_switch(spec.pin_of(NAME))
    if ctx.enabled("seaweedfs"):
        return {
            switch: "true", "s3.endpoint": ctx.url("seaweedfs", "s3", side),
            "s3.path-style-access": "true", "s3.region": spec.storage.region,
            "s3.aws-access-key": "${ENV:S3_ACCESS_KEY}", "s3.aws-secret-key": "${ENV:S3_SECRET_KEY}",
        }
    return {switch: "true", "s3.endpoint": f"https://s3.{spec.storage.region}.amazonaws.com",
            "s3.path-style-access": "false", "s3.region": spec.storage.region}


def catalog_files(ctx: ServiceContext, side: Side = Side.INTERNAL) -> dict[str, str]:
    """One Iceberg catalog properties file per enabled catalog service.

    Credentials are read from Trino's environment (`${ENV:...}`), so the files hold no secret.
    """
    files: dict[str, str] = {}
    for name, definition in registry().catalogs().items():
        if not ctx.enabled(name):
            continue
        role = definition.catalog
        assert role is not None
        catalog_ctx = ServiceContext(ctx.spec, name)
        props = {
            "connector.name": "iceberg", "iceberg.catalog.type": "rest",
            "iceberg.rest-catalog.uri": ctx.url(name, "http", side, role.path),
            "iceberg.rest-catalog.warehouse": role.warehouse(ctx.spec),
            # Tables as code: the owner and promises a declared table carries as Iceberg properties, settable
            # through Trino (CREATE/ALTER ... extra_properties) where Trino creates the tables (aws).
            "iceberg.allowed-extra-properties": ",".join(dict.fromkeys(
                [*declared_tables.PROPERTY_KEYS, *(key for table in ctx.spec.tables for key in table.properties)])),
            **role.trino_properties(catalog_ctx),
            **store_properties(ctx, side),
        }
        files[f"{role.engine_name}.properties"] = properties(props)
    return files


def config_properties(port: int, role: Literal["single", "coordinator", "worker"], discovery: str,
                      heap_bytes: int) -> str:
    """config.properties of one node: a single node that also works, a planning coordinator, or a worker."""
    # A single node keeps half its heap for queries; a worker 30% (Trino's heap headroom takes 30%).
    share = 5 if role == "single" else 3
    per_node_mb = max(heap_bytes * share // 10 // (1024 * 1024), 256)
    values: dict[str, object] = {"coordinator": "false" if role == "worker" else "true"}
    if role != "worker":
        values["node-scheduler.include-coordinator"] = "true" if role == "single" else "false"
    values.update({"http-server.http.port": port, "discovery.uri": discovery})
    if role == "single":
        values["query.max-memory"] = f"{per_node_mb}MB"
    values["query.max-memory-per-node"] = f"{per_node_mb}MB"
    return properties(values)


def node_properties(data_dir: str) -> str:
    """Natively the HTTP server binds loopback only (node.bind-ip; Trino has no http host property)."""
    return properties({
        "node.environment": "lab", "node.id": "native-coordinator", "node.data-dir": data_dir,
        "node.bind-ip": "127.0.0.1", "node.internal-address": "127.0.0.1",
    })


def jvm_config(heap_bytes: int) -> str:
    """JVM flags with an explicit heap (the container limit is the budget, the heap stays below it)."""
    flags = [
        "-server", f"-Xmx{heap_bytes // (1024 * 1024)}m", "-XX:InitialRAMPercentage=10",
        "-XX:+ExitOnOutOfMemoryError", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=32M",
        "-XX:+ExplicitGCInvokesConcurrent", "-XX:ReservedCodeCacheSize=256M", "-Djdk.attach.allowAttachSelf=true",
        "-Dfile.encoding=UTF-8", "-XX:+EnableDynamicAgentLoading", "-XX:-OmitStackTraceInFastThrow",
        "-Djdk.nio.maxCachedBufferSize=2000000", "--enable-native-access=ALL-UNNAMED",
    ]
    return "\n".join(flags) + "\n"


def heap_bytes(ctx: ServiceContext) -> int:
    service = ctx.service
    return parse_size(service.heap or service.memory)


def secret_env(ctx: ServiceContext) -> dict[str, str]:
    """The credentials Trino's catalog files read from the environment."""
    env = {}
    if ctx.enabled("seaweedfs"):
        env.update({"S3_ACCESS_KEY": secret("s3-access-key"), "S3_SECRET_KEY": secret("s3-secret-key")})
    if ctx.enabled("polaris"):
        env["POLARIS_ROOT_SECRET"] = secret("polaris-root-secret")
    return env


def etc_files(ctx: ServiceContext, etc: str, role: Literal["single", "coordinator", "worker"], discovery: str,
              heap: int) -> dict[str, str]:
    """Every file of Trino's etc directory for one role (catalogs, config, JVM)."""
    files = {f"{etc}/catalog/{name}": body for name, body in catalog_files(ctx, Side.INTERNAL).items()}
    files[f"{etc}/jvm.config"] = jvm_config(heap)
    files[f"{etc}/config.properties"] = config_properties(ctx.listen_port("http"), role, discovery, heap)
    return files


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    port = ctx.listen_port("http")
    uploads = etc_files(ctx, IMAGE_ETC, "single", f"http://localhost:{port}", heap_bytes(ctx))
    return ContainerPlan(env=secret_env(ctx), uploads=uploads)


def ecs(ctx: ServiceContext) -> EcsPlan:
    """The coordinator on Fargate: plans and schedules only (workers: ``ecs_worker``)."""
    port = ctx.listen_port("http")
    return EcsPlan(env={**secret_env(ctx), "AWS_REGION": ctx.spec.aws.region}, command=[IMAGE_LAUNCHER],
                   files=etc_files(ctx, IMAGE_ETC, "coordinator", f"http://localhost:{port}", heap_bytes(ctx)))


def ecs_worker(ctx: ServiceContext, memory_mib: int) -> EcsPlan:
    """A worker task of ``memory_mib`` (the stack's Fargate size), heap three quarters of it."""
    heap = memory_mib * 3 // 4 * 1024 * 1024
    files = etc_files(ctx, IMAGE_ETC, "worker", ctx.url(NAME, "http"), heap)
    return EcsPlan(env={**secret_env(ctx), "AWS_REGION": ctx.spec.aws.region}, command=[IMAGE_LAUNCHER],
                   files=files)


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """`bin/launcher run` execs the JVM itself: one pid to stop, no orphans. Never `-v` (prints env)."""
    assert host.artifact is not None and host.java_home is not None
    port = ctx.listen_port("http")
    etc, data = host.home / "etc", host.home / "data"
    files = etc_files(ctx, str(etc), "single", f"http://127.0.0.1:{port}", heap_bytes(ctx))
    files.update({str(etc / "node.properties"): node_properties(str(data)),
                  str(etc / "log.properties"): "io.trino=INFO\n"})
    hard_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return NativePlan(
        argv=[str(host.artifact.path / "bin" / "launcher"), "run", f"--etc-dir={etc}", f"--data-dir={data}"],
        env={**secret_env(ctx), "JAVA_HOME": str(host.java_home)},
        files=files,
        health={"kind": "http", "url": ctx.url(NAME, "http", path="/v1/info"), "expect_status": 200,
                "json_field": "starting", "json_expect": False},
        ulimit_nofile=max(MIN_OPEN_FILES, min(hard_limit, 65536)),
        stop_grace_s=20.0,
    )


# -- native artifact: the trino-server tarball from Maven Central --------------------------------


def native_version(ctx: ServiceContext) -> str:
    return ctx.service.native_version or ctx.service.version


def artifact_key(ctx: ServiceContext) -> str:
    return f"trino:{native_version(ctx)}:{','.join(sorted(PLUGINS))}"


def fetch_server(ctx: ServiceContext) -> Artifact:
    """Trino server unpacked into the cache with only ``PLUGINS`` kept; ``path`` is its home.

    The tarball (~820 MB) is verified against its published checksum, unpacked, and deleted.
    """
    version = native_version(ctx)
    key = artifact_key(ctx)
    with cache.locked(key):
        if found := cache.cached(key):
            return found
        coordinate = maven.Coordinate("io.trino", "trino-server", version, None, "tar.gz")
        tarball = maven.fetch(coordinate)
        tar_sha256 = cache.load_manifest()[coordinate.key]["sha256"]
        home = cache.cache_root() / NAME / f"trino-server-{version}"
        cache.console.print(f"[bold]trino[/]: unpacking {tarball.name} (plugins kept: {', '.join(PLUGINS)})")

        def prune(unpacked: Path) -> None:
            for plugin in (unpacked / "plugin").iterdir():
                if plugin.name not in PLUGINS:
                    shutil.rmtree(plugin)

        archive.unpack_tarball(tarball, home, f"trino-server-{version}", prune)
        tarball.unlink()  # ~820 MB; its sha256 stays in the manifest
        files = cache.tree_files(home)
        entry = {
            "name": NAME, "requested": version, "version": version, "path": str(home), "root": str(home),
            "files": files, "sha256": cache.tree_digest(files), "source": coordinate.url,
            "tarball_sha256": tar_sha256, "notes": [f"plugins kept: {', '.join(PLUGINS)}"],
        }
        cache.record(key, entry)
        return cache.artifact_from(entry)


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="SQL engine; one Iceberg catalog file per catalog service",
        container=container, native=native, ecs=ecs, java=JAVA,
        uses_catalogs=True,  # its catalog files point at each catalog's warehouse: wait until it exists
        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_server, source="Maven Central io.trino:trino-server"),
    ),
)
