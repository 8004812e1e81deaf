"""Trino: the distributed SQL engine in front of analysts, one catalog file per way to the tables (compute).

Whole definition: defaults, the catalog files (one per enabled catalog service, from each catalog's
``CatalogRole``; a gated catalog gets a second, read-only one), the node/config/JVM files for every role
it runs in (a single-node coordinator on docker and native; coordinator and workers on aws), its security
(below), the container, the local process, the ECS coordinator, and the native artifact (the
trino-server tarball from Maven Central, plugins pruned).

Security (governance, fails closed): clients authenticate with a password over HTTPS only (the platform
issues the certificate, ``trino-tls``); plain HTTP answers health checks and refuses queries. One Trino
user per identity (``identities``), its password the identity's ``trino-password-<name>``, hashed
(PBKDF2) into the password file. File-based access control gives writers (platform and writer
identities) the catalogs that hold the writer identity's store keys and catalog token, and readers only
the ``<catalog>_ro`` catalogs, whose store keys and catalog token are the reader identity's. Trino's
file-based rules do not gate table procedures (``ALTER TABLE ... EXECUTE optimize``, ``expire_snapshots``)
once a catalog is readable, so a reader's catalog must itself be unable to write: its store refuses the
writes and the catalog gate refuses the commits.
"""

from __future__ import annotations

import json
import resource
import shutil
from pathlib import Path
from typing import Literal

from infra.artifacts import archive, cache, maven
from infra.artifacts.recipe import Artifact, ArtifactRecipe
from infra.operations import tables as declared_tables
from infra.services.catalogs import catalog_url, gate_of
from infra.services.context import ServiceContext, Side, host_of
from infra.services.definition import CertificateSpec, SecretSpec, ServiceDefinition
from infra.services.placeholders import pbkdf2_of, secret
from infra.services.plans import ContainerHost, ContainerPlan, EcsPlan, NativeHost, NativePlan, properties
from infra.services.registry import registry
from infra.spec import PlatformSpec, Target, parse_size

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
    # http: health checks and node-to-node traffic only (queries need https, where passwords are checked).
    "ports": {"http": {"internal": 8080, "external": 8080}, "https": {"internal": 8443, "external": 8443}},
    "health": {"kind": "http", "port": "http", "path": "/v1/info",
               "command": ["CMD", "/usr/lib/trino/bin/health-check"], "ready_timeout_s": 240},
    "memory": "2GiB",
    "heap": "1GiB",
    # Waits for each enabled catalog's setup job (uses_catalogs); nothing else: Trino resolves
    # catalogs lazily, and on aws the store is S3 itself.
}

#: Java major Trino 476+ needs.
JAVA = 24
#: Trino plugins kept after unpacking natively; the server starts with only these (the file password
#: authenticator is its own plugin; its jars are hard links into lib/, which is kept whole).
PLUGINS = ("iceberg", "password-authenticators")
#: The Trino catalog a gated catalog's readers get: ``<engine name>_ro``.
READ_ONLY_SUFFIX = "_ro"
SHARED_SECRET = SecretSpec("trino-shared-secret", "trinoSharedSecret", "lab-trino-internal-communication-secret")
TLS = "trino-tls"
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


def env_name(kind: str, identity: str) -> str:
    """The environment variable holding one identity's credential: ``S3_SECRET_KEY_READER``."""
    return f"{kind}_{identity.upper().replace('-', '_')}"


def store_properties(ctx: ServiceContext, side: Side, identity: str) -> dict[str, str]:
    """How Trino reaches table files: the lab store with one identity's keys from the environment, or S3 itself."""
    spec = ctx.spec
    switch = s3_switch(spec.pin_of(NAME))
    if ctx.enabled("seaweedfs"):
        return {
            switch: "true", "s3.endpoint": ctx.url("seaweedfs", "s3", side),
            "s3.path-style-access": "true", "s3.region": spec.storage.region,
            "s3.aws-access-key": f"${{ENV:{env_name('S3_ACCESS_KEY', identity)}}}",
            "s3.aws-secret-key": f"${{ENV:{env_name('S3_SECRET_KEY', identity)}}}",
        }
    return {switch: "true", "s3.endpoint": f"https://s3.{spec.storage.region}.amazonaws.com",
            "s3.path-style-access": "false", "s3.region": spec.storage.region}


def catalogs(spec: PlatformSpec) -> dict[str, tuple[str, str]]:
    """Trino catalog -> (catalog service, identity whose credentials it holds), in registry order.

    Every enabled catalog service is one catalog with the writer identity's credentials; a gated catalog
    (whose gate checks tokens) is also ``<name>_ro`` with the reader identity's. An ungated catalog has
    no read-only twin: a reader gets no Trino catalog for it rather than one that could write.
    """
    found: dict[str, tuple[str, str]] = {}
    for name, definition in registry().catalogs().items():
        if name not in spec.enabled_services():
            continue
        assert definition.catalog is not None
        found[definition.catalog.engine_name] = (name, spec.governance.writer)
        if gate_of(spec, name):
            found[definition.catalog.engine_name + READ_ONLY_SUFFIX] = (name, spec.governance.reader)
    return found


def catalog_files(ctx: ServiceContext, side: Side = Side.INTERNAL) -> dict[str, str]:
    """One Iceberg catalog properties file per Trino catalog (``catalogs``).

    Credentials are read from Trino's environment (`${ENV:...}`), so the files hold no secret.
    """
    files: dict[str, str] = {}
    for trino_catalog, (name, identity) in catalogs(ctx.spec).items():
        role = registry()[name].catalog
        assert role is not None
        catalog_ctx = ServiceContext(ctx.spec, name)
        props = {
            "connector.name": "iceberg", "iceberg.catalog.type": "rest",
            "iceberg.rest-catalog.uri": catalog_url(ctx.spec, name, side),
            "iceberg.rest-catalog.warehouse": role.warehouse(ctx.spec),
            # Tables as code: the owner and promises a declared table carries as Iceberg properties, settable
            # through Trino (CREATE/ALTER ... extra_properties) where Trino creates the tables (aws).
            "iceberg.allowed-extra-properties": ",".join(dict.fromkeys(
                [*declared_tables.PROPERTY_KEYS, *(key for table in ctx.spec.tables for key in table.properties)])),
            **role.trino_properties(catalog_ctx),
        }
        if gate_of(ctx.spec, name):
            props.update({"iceberg.rest-catalog.security": "OAUTH2",
                          "iceberg.rest-catalog.oauth2.token": f"${{ENV:{env_name('CATALOG_TOKEN', identity)}}}"})
        props.update(store_properties(ctx, side, identity))
        files[f"{trino_catalog}.properties"] = properties(props)
    return files


def access_rules(spec: PlatformSpec) -> dict[str, list[dict[str, str]]]:
    """File-based access control: writers get the writing catalogs, readers only the read-only ones.

    Rules match the whole user name; a user no rule names reaches no catalog (fails closed).
    """
    def alternatives(names: list[str]) -> str:
        return "|".join(sorted(names))

    by_catalog = catalogs(spec)
    writing = [c for c, (_, identity) in by_catalog.items() if identity == spec.governance.writer]
    reading = [c for c, (_, identity) in by_catalog.items() if identity == spec.governance.reader]
    writers = spec.identities_of("platform") + spec.identities_of("writer")
    readers = spec.identities_of("reader")
    rules = []
    if writers and writing:
        rules.append({"user": alternatives(writers), "catalog": alternatives(writing), "allow": "all"})
    if readers and reading:
        rules.append({"user": alternatives(readers), "catalog": alternatives(reading), "allow": "read-only"})
    rules.append({"catalog": "system", "allow": "read-only"})
    return {"catalogs": rules}


def password_file(spec: PlatformSpec) -> str:
    """``user:<PBKDF2 hash>`` per identity (placeholders: the target renders the hashes from the secrets)."""
    return "".join(f"{name}:{pbkdf2_of(f'trino-password-{name}')}\n" for name in spec.identities)


PASSWORD_DB = SecretSpec("trino-password-db", "", "", derive=password_file)


def tls_hosts(ctx: ServiceContext) -> list[str]:
    """Names the HTTPS certificate is valid for: Trino's internal host name, and loopback for host clients."""
    hosts = [host_of(ctx.spec, NAME, Side.INTERNAL), "127.0.0.1", "localhost"]
    if ctx.spec.target is Target.DOCKER:
        hosts.append(host_of(ctx.spec, NAME, Side.EXTERNAL))
    return list(dict.fromkeys(hosts))


def security_files(ctx: ServiceContext, etc: str) -> dict[str, str]:
    """The coordinator's authentication and access control files (password hashes are placeholders)."""
    return {
        f"{etc}/password-authenticator.properties": properties({
            "password-authenticator.name": "file", "file.password-file": f"{etc}/password.db",
            "file.refresh-period": "5s"}),
        f"{etc}/password.db": secret(PASSWORD_DB.name),
        f"{etc}/access-control.properties": properties({
            "access-control.name": "file", "security.config-file": f"{etc}/rules.json",
            "security.refresh-period": "10s"}),
        f"{etc}/rules.json": json.dumps(access_rules(ctx.spec), indent=2) + "\n",
    }


def config_properties(port: int, role: Literal["single", "coordinator", "worker"], discovery: str,
                      heap_bytes: int, https_port: int | None = None, keystore: str | None = None) -> str:
    """config.properties of one node: a single node that also works, a planning coordinator, or a worker.

    A coordinator with ``https_port`` serves clients over HTTPS with password authentication, and refuses
    passwords (and so every query) over plain HTTP; nodes trust each other through the shared secret.
    """
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
    if role != "worker" and https_port is not None:
        values.update({
            "http-server.https.enabled": "true", "http-server.https.port": https_port,
            "http-server.https.keystore.path": keystore,
            "http-server.authentication.type": "PASSWORD",
            "http-server.authentication.allow-insecure-over-http": "false",
        })
    values["internal-communication.shared-secret"] = "${ENV:TRINO_SHARED_SECRET}"
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
    """The credentials Trino's config and catalog files read from the environment: each catalog's identity's."""
    spec = ctx.spec
    env = {"TRINO_SHARED_SECRET": secret(SHARED_SECRET.name)}
    for name, identity in {(n, i) for n, i in catalogs(spec).values()}:
        if ctx.enabled("seaweedfs"):
            env[env_name("S3_ACCESS_KEY", identity)] = spec.identities[identity].access_key  # not a secret
            env[env_name("S3_SECRET_KEY", identity)] = secret(f"s3-secret-key-{identity}")
        if gate_of(spec, name):
            env[env_name("CATALOG_TOKEN", identity)] = secret(f"catalog-token-{identity}")
    if ctx.enabled("polaris"):
        env["POLARIS_ROOT_SECRET"] = secret("polaris-root-secret")
    return dict(sorted(env.items()))


def etc_files(ctx: ServiceContext, etc: str, role: Literal["single", "coordinator", "worker"], discovery: str,
              heap: int) -> dict[str, str]:
    """Every file of Trino's etc directory for one role (catalogs, config, JVM; security on coordinators)."""
    files = {f"{etc}/catalog/{name}": body for name, body in catalog_files(ctx, Side.INTERNAL).items()}
    files[f"{etc}/jvm.config"] = jvm_config(heap)
    keystore = f"{etc}/tls/trino.pem"
    files[f"{etc}/config.properties"] = config_properties(ctx.listen_port("http"), role, discovery, heap,
                                                          https_port=ctx.listen_port("https"), keystore=keystore)
    if role != "worker":
        files.update(security_files(ctx, etc))
        files[keystore] = secret(f"{TLS}-pem")
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
        secrets=(SHARED_SECRET, PASSWORD_DB), certificates=(CertificateSpec(TLS, tls_hosts),),
    ),
)
