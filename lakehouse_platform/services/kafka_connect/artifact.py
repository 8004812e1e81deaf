"""Kafka Connect's artifacts: the worker and both plugin directories (jar locks), the lab's sink plugin, and the
MSK Connect custom plugins (with the project's Secrets Manager config provider, compiled here).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from lakehouse_platform.artifacts import cache, java, maven
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka import artifact as kafka
from lakehouse_platform.services.kafka_connect.config import CONNECT
from lakehouse_platform.services.kafka_connect.container import PLUGIN_DIR_IN_IMAGE

DEBEZIUM_LOCK = Path(__file__).with_name("debezium-connector-postgres.lock.json")


ICEBERG_LOCK = Path(__file__).with_name("iceberg-kafka-connect.lock.json")


PLUGINS = {"debezium-connector-postgres": DEBEZIUM_LOCK, "iceberg-kafka-connect": ICEBERG_LOCK}


def _locks() -> dict[str, maven.JarLock]:
    return {name: maven.JarLock.read(path) for name, path in PLUGINS.items()}


def artifact_key(ctx: ServiceContext) -> str:
    digests = "-".join(lock.digest()[:12] for lock in (kafka.lock(), *_locks().values()))
    return f"kafka-connect:{ctx.service.native_version or ctx.service.version}:{digests}"


def fetch_worker(ctx: ServiceContext) -> Artifact:
    """``<root>/libs`` (Kafka 4.3.1: the worker) and ``<root>/plugins/<plugin>/`` (one classloader each)."""
    locks = _locks()
    version = kafka.locked_version(locks["debezium-connector-postgres"], "debezium-connector-postgres")
    wanted = ctx.service.native_version or ctx.service.version
    if not version.startswith(wanted):
        raise ArtifactError(f"{DEBEZIUM_LOCK.name} pins Debezium {version}, the spec wants {wanted}")
    key = artifact_key(ctx)
    root = cache.cache_root() / CONNECT / key.split(":", 2)[2]

    def build() -> cache.Entry:
        libs = maven.link_into(maven.fetch_all(kafka.lock().jars), root / "libs")
        files = {f"libs/{p.name}": cache.file_record(p) for p in libs}
        for name, jar_lock in locks.items():
            for jar in maven.link_into(maven.fetch_all(jar_lock.jars), root / "plugins" / name):
                files[f"plugins/{name}/{jar.name}"] = cache.file_record(jar)
        return {
            "name": CONNECT, "requested": wanted, "version": version.removesuffix(".Final"), "path": str(root),
            "root": str(root), "files": files, "sha256": cache.tree_digest(files),
            "classpath": [str(p) for p in libs], "main_class": "org.apache.kafka.connect.cli.ConnectDistributed",
            "source": "Maven Central, jar locks kafka-runtime, debezium-connector-postgres, iceberg-kafka-connect",
            "notes": [f"Debezium {version}: 3.6.2.Final (the pin) does not resolve on Maven Central "
                      "(debezium-build-parent:3.6.2.Final missing); the newest fully served 3.6 is used",
                      f"plugins: {', '.join(f'{n} ({len(lk.jars)} jars)' for n, lk in locks.items())}"],
        }

    return cache.obtain(key, build)


def lab_key(ctx: ServiceContext) -> str:
    return f"kafka-connect-plugin:iceberg-kafka-connect:{maven.JarLock.read(ICEBERG_LOCK).digest()[:12]}"


def fetch_sink_plugin(ctx: ServiceContext) -> Artifact:
    """The Iceberg sink's plugin directory for the lab's Connect container (real files: it is bind-mounted)."""
    jar_lock = maven.JarLock.read(ICEBERG_LOCK)
    version = kafka.locked_version(jar_lock, "iceberg-kafka-connect")
    out = cache.cache_root() / CONNECT / f"iceberg-kafka-connect-{jar_lock.digest()[:12]}"
    return kafka.assemble(lab_key(ctx), jar_lock, out, version,
                          [f"jar lock {ICEBERG_LOCK.name}: {len(jar_lock.jars)} jars, mounted at "
                           f"{PLUGIN_DIR_IN_IMAGE}/iceberg-kafka-connect"])


MSK_CLIENTS_LOCK = Path(__file__).with_name("msk-connect-clients.lock.json")


PROVIDER_SOURCE = Path(__file__).with_name("msk-secrets-provider") / "SecretsManagerConfigProvider.java"


PROVIDER_CLASS = "lakehouse.connect.SecretsManagerConfigProvider"


PROVIDER_DIR = "secrets-provider"  # in the artifact, and in each plugin ZIP


#: MSK Connect's Java runtime is not documented; the provider targets the oldest one Kafka 3.x supports.
PROVIDER_RELEASE = 11


def msk_enabled(spec: PlatformSpec) -> bool:
    return spec.aws.kafka_msk and bool(spec.streams.connectors)


def debezium_plugin(ctx: ServiceContext) -> maven.Coordinate:
    """Debezium's published PostgreSQL plugin archive at the lab image's version (3.6.2.Final is served)."""
    return maven.Coordinate("io.debezium", "debezium-connector-postgres", ctx.service.image_tag, "plugin", "zip")


def msk_key(ctx: ServiceContext) -> str:
    source = hashlib.sha256(PROVIDER_SOURCE.read_bytes()).hexdigest()[:12]
    locks = "-".join(maven.JarLock.read(p).digest()[:12] for p in (ICEBERG_LOCK, MSK_CLIENTS_LOCK))
    return f"msk-connect-plugins:{ctx.service.image_tag}:{locks}:provider-{source}"


def fetch_msk_plugins(ctx: ServiceContext) -> Artifact:
    """What the aws target uploads as MSK Connect custom plugins (one ZIP per connector kind):

    ``debezium-connector-postgres-<v>-plugin.zip`` (Maven Central, verified), ``iceberg-kafka-connect/``
    (the sink's jar lock) and ``secrets-provider/`` (the platform's Secrets Manager config provider,
    compiled here, with the AWS SDK and MSK IAM authentication from their jar lock), which both ZIPs carry.
    """
    key = msk_key(ctx)
    root = cache.cache_root() / "msk-connect" / key.split(":", 2)[2].replace(":", "-")

    def build() -> cache.Entry:
        files: dict[str, dict] = {}
        clients = maven.link_into(maven.fetch_all(maven.JarLock.read(MSK_CLIENTS_LOCK).jars), root / PROVIDER_DIR)
        kafka_clients = next(p for p in maven.fetch_all(kafka.lock().jars) if p.name.startswith("kafka-clients-"))
        provider = java.compile_jar([PROVIDER_SOURCE], [kafka_clients, *clients],
                                    root / PROVIDER_DIR / "lakehouse-msk-secrets-provider.jar",
                                    release=PROVIDER_RELEASE)
        for path in [*clients, provider]:
            files[f"{PROVIDER_DIR}/{path.name}"] = cache.file_record(path)
        sink_jars = maven.fetch_all(maven.JarLock.read(ICEBERG_LOCK).jars)
        for jar in maven.link_into(sink_jars, root / "iceberg-kafka-connect"):
            files[f"iceberg-kafka-connect/{jar.name}"] = cache.file_record(jar)
        coordinate = debezium_plugin(ctx)
        archive = maven.fetch(coordinate)
        target = root / coordinate.filename
        target.unlink(missing_ok=True)
        os.link(archive, target)
        files[coordinate.filename] = cache.file_record(target)
        return {
            "name": "msk-connect-plugins", "requested": ctx.service.version, "version": ctx.service.version,
            "path": str(root), "root": str(root), "files": files, "sha256": cache.tree_digest(files),
            "source": f"Maven Central ({coordinate.filename}, jar locks iceberg-kafka-connect and msk-connect-clients)"
                      f" + javac {PROVIDER_SOURCE.name}",
            "notes": [f"config provider {PROVIDER_CLASS} compiled for Java {PROVIDER_RELEASE}: AWS's own "
                      "(aws-samples/msk-config-providers) is not on Maven Central"],
        }

    return cache.obtain(key, build)


def plugin_dir(root: Path, plugin: str) -> Path:
    """Where one plugin lives in the native worker artifact."""
    return root / "plugins" / plugin
