"""Kafka's native artifact: the locked runtime classpath from Maven Central, one jar lock per Kafka version."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.artifacts import cache, maven
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.kafka.config import KAFKA

KAFKA_LOCK = Path(__file__).with_name("kafka-runtime.lock.json")
#: Kafka version -> its runtime jar lock. The pin's is ``KAFKA_LOCK`` (Connect's worker runs on it too); the version
#: before it is there for the version-bump test (tests/e2e/test_bumps.py moves a broker from it to the pin). Both were
#: resolved the same way (each lock's ``resolved_with``); they differ in Kafka's own modules only.
LOCKS = {"4.3.1": KAFKA_LOCK, "4.3.0": Path(__file__).with_name("kafka-runtime-4.3.0.lock.json")}


def lock(version: str | None = None) -> maven.JarLock:
    """The jar lock of Kafka ``version`` (the pin's when None); a version without a lock is refused."""
    if version is None:
        return maven.JarLock.read(KAFKA_LOCK)
    if version not in LOCKS:
        raise ArtifactError(f"services.kafka.version: no runtime jar lock for Kafka {version}; locked versions: "
                            f"{', '.join(sorted(LOCKS))} (a new pin needs its lock: see {KAFKA_LOCK.name}'s "
                            "resolved_with)")
    return maven.JarLock.read(LOCKS[version])


def locked_version(jar_lock: maven.JarLock, artifact: str) -> str:
    for jar in jar_lock.jars:
        if jar.coordinate.artifact == artifact:
            return jar.coordinate.version
    raise ArtifactError(f"jar lock {jar_lock.name} has no {artifact}")


def artifact_key(ctx: ServiceContext) -> str:
    return f"kafka:{ctx.service.version}:lock-{lock(ctx.service.version).digest()[:12]}"


def assemble(key: str, jar_lock: maven.JarLock, out_dir: Path, version: str, notes: list[str]) -> Artifact:
    """Fetch every jar of ``jar_lock`` (verified), hard-link them into ``out_dir``, record the entry."""

    def build() -> cache.Entry:
        jars = maven.link_into(maven.fetch_all(jar_lock.jars), out_dir)
        files = {jar.name: cache.file_record(jar) for jar in jars}
        return {
            "name": jar_lock.name, "requested": version, "version": version, "path": str(out_dir),
            "root": str(out_dir), "files": files, "sha256": jar_lock.digest(),
            "classpath": [str(j) for j in jars], "source": f"Maven Central, jar lock {jar_lock.name}",
            "notes": notes,
        }

    return cache.obtain(key, build)


def fetch_kafka(ctx: ServiceContext) -> Artifact:
    """Kafka's broker, tools and Connect classpath in one directory (92 jars, 54 MB)."""
    jar_lock = lock(ctx.service.version)
    version = locked_version(jar_lock, "kafka_2.13")
    if version != ctx.service.version:
        raise ArtifactError(f"{jar_lock.name} pins Kafka {version}, the spec pins {ctx.service.version}: "
                            "regenerate the lock for the new pin")
    digest = jar_lock.digest()[:12]
    return assemble(artifact_key(ctx), jar_lock, cache.cache_root() / KAFKA / f"{version}-{digest}" / "libs", version,
                    [f"jar lock {KAFKA_LOCK.name}: {len(jar_lock.jars)} jars"])
