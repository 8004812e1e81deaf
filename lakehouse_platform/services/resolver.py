"""Which artifacts a stack needs, from its spec and the service registry; looked up, or fetched.

The Pulumi program uses ``CacheResolver``: it only looks artifacts up in the verified cache, and a
missing one stops the run with one message naming every missing artifact and the command that
fetches them. ``FetchingResolver`` (``make artifacts``) obtains them, reading the same pins, so the
two can never disagree. Tests pass a resolver of their own.
"""

from __future__ import annotations

from typing import Protocol

from lakehouse_platform.artifacts import cache, clients, java, runtime
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError, ArtifactMissing
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.definition import ArtifactRecipe
from lakehouse_platform.services.registry import registry


class Resolver(Protocol):
    """What the program asks for: the artifacts of a stack."""

    def resolve(self, spec: PlatformSpec) -> StackArtifacts: ...


def recipe_of(spec: PlatformSpec, name: str) -> ArtifactRecipe | None:
    """The recipe a service needs on this stack's target (native: what it runs; docker: what it mounts, or with
    ``lab.images: built`` what its image is built from: what the native target runs, else what it mounts).

    What the aws target uploads is a service's ``aws.upload``, needed only where the stack runs it
    (``cloud_recipes``).
    """
    definition = registry()[name]
    if spec.target is Target.NATIVE:
        recipe = definition.native.artifact
    elif spec.target is Target.DOCKER:
        # The lab's built images are made of what the native target runs.
        recipe = (definition.native.artifact or definition.docker.lab_artifact) if spec.runs_native_artifacts \
            else definition.docker.lab_artifact
    else:
        return None
    if recipe is not None and recipe.needed is not None and not recipe.needed(ServiceContext(spec, name)):
        return None  # e.g. the lab fixture's PostgreSQL driver while the fixture keeps SQLite
    return recipe


def cloud_recipes(spec: PlatformSpec) -> dict[str, ArtifactRecipe]:
    """service -> the recipe of what the aws target uploads for it (only where the stack runs it)."""
    if spec.target is not Target.AWS:
        return {}
    return {d.name: d.aws.upload for d in registry() if d.aws.upload is not None
            and (d.aws.upload.needed is None or d.aws.upload.needed(ServiceContext(spec, d.name)))}


def java_majors(spec: PlatformSpec) -> set[int]:
    """The JDK majors the stack's native processes (or the lab's built images: Trino's) need."""
    if not spec.runs_native_artifacts:
        return set()
    majors = {registry()[name].native.java for name in spec.enabled_services()}
    return {m for m in majors if m} | {java.JAVA_FOR_JVM_SERVICES}


def host_clients_apply(spec: PlatformSpec) -> bool:
    """Whether the stack's clients on this host (Spark, DuckDB) load what the resolver finds: natively and in the
    lab, where the engines the probes and users run are this host's (on aws they run in the cloud)."""
    return spec.target in (Target.NATIVE, Target.DOCKER)


class CacheResolver:
    """Looks every artifact up in the cache; never downloads, builds or installs (the program's resolver)."""

    def resolve(self, spec: PlatformSpec) -> StackArtifacts:
        services: dict[str, Artifact] = {}
        missing: list[str] = []
        for name in spec.enabled_services():
            recipe = recipe_of(spec, name)
            if recipe is None:
                continue
            key = recipe.key(ServiceContext(spec, name))
            found = cache.lookup(key)
            if found is None:
                missing.append(f"{name} ({key}, from {recipe.source})")
            else:
                services[name] = found
        cloud: dict[str, Artifact] = {}
        for name, recipe in cloud_recipes(spec).items():
            key = recipe.key(ServiceContext(spec, name))
            if (found_cloud := cache.lookup(key)) is None:
                missing.append(f"{name} ({key}, from {recipe.source})")
            else:
                cloud[name] = found_cloud
        spark_jars = duckdb = None
        if host_clients_apply(spec):
            spark_jars = cache.lookup(clients.spark_jars_key(spec.engines))
            if spark_jars is None:
                missing.append(f"spark-jars ({clients.spark_jars_key(spec.engines)}, from Maven Central)")
            duckdb = clients.cached_duckdb_extensions()
            if duckdb is None:
                missing.append(f"duckdb-extensions ({clients.duckdb_key()}, from the duckdb-ext-* packages)")
        python = None
        if spec.target is Target.NATIVE:
            python = runtime.lookup()
            if python is None:
                missing.append(f"{runtime.NAME} ({runtime.runtime_key()}, from PyPI: {runtime.OPERATIONS_LOCK.name})")
        if missing:
            raise ArtifactMissing(
                "artifacts missing from the cache "
                f"({cache.cache_root(create=False)}): " + "; ".join(missing)
                + ". Fetch them with `make artifacts STACK=<stack>` "
                "(lakehouse artifacts --stack <stack>)"
            )
        return StackArtifacts(services, {m: java.find_java(m) for m in java_majors(spec)}, spark_jars, duckdb, cloud,
                              python)


class FetchingResolver:
    """Obtains every artifact a stack needs (``make artifacts``); what it records, ``CacheResolver`` finds."""

    def __init__(self, only: set[str] | None = None):
        self.only = only
        self.timings: dict[str, float] = {}

    def resolve(self, spec: PlatformSpec) -> StackArtifacts:
        import time

        services: dict[str, Artifact] = {}
        by_key: dict[str, Artifact] = {}  # services sharing one artifact (Flink's managers and job) fetch it once
        for name in spec.enabled_services():
            recipe = recipe_of(spec, name)
            if recipe is None or (self.only and name not in self.only):
                continue
            key = recipe.key(ServiceContext(spec, name))
            if key in by_key:
                services[name] = by_key[key]
                continue
            started = time.monotonic()
            try:
                services[name] = by_key[key] = recipe.fetch(ServiceContext(spec, name))
            except ArtifactError as exc:
                raise ArtifactError(f"{name}: {exc}") from None
            self.timings[name] = time.monotonic() - started
        cloud: dict[str, Artifact] = {}
        for name, recipe in cloud_recipes(spec).items():
            if self.only and name not in self.only:
                continue
            started = time.monotonic()
            cloud[name] = recipe.fetch(ServiceContext(spec, name))
            self.timings[name] = time.monotonic() - started
        spark_jars = duckdb = None
        if host_clients_apply(spec) and (not self.only or "spark-jars" in self.only):
            started = time.monotonic()
            spark_jars = clients.fetch_spark_jars(spec.engines)
            self.timings["spark-jars"] = time.monotonic() - started
            duckdb = clients.fetch_duckdb_extensions()
        python = None
        if spec.target is Target.NATIVE and (not self.only or runtime.NAME in self.only):
            started = time.monotonic()
            python = runtime.fetch()
            self.timings[runtime.NAME] = time.monotonic() - started
        return StackArtifacts(services, {m: java.find_java(m) for m in java_majors(spec)}, spark_jars, duckdb, cloud,
                              python)
