"""What the host-side engines load: Iceberg's Spark runtime jars, and DuckDB's extensions from PyPI packages.

Neither is a service of the platform; both are obtained by ``make artifacts`` like every service
artifact, and the native target's outputs tell clients where they are: in the artifact cache, never in a
checkout (the extensions are copied there from the ``duckdb-ext-*`` packages of the venv that fetched them).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lakehouse_platform.artifacts import cache, maven
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.model import EngineSpec


def spark_jars_key(engines: EngineSpec) -> str:
    return f"spark-jars:{engines.spark}:{engines.iceberg}"


def fetch_spark_jars(engines: EngineSpec) -> Artifact:
    """Iceberg's Spark runtime for Spark ``major.minor`` (Scala 2.13) and Iceberg's AWS bundle.

    ``classpath`` holds both jars (for ``spark.jars``). When Maven Central has no runtime of the pinned
    Iceberg for this Spark, the newest it has is taken and ``notes`` says so.
    """
    spark_minor = ".".join(engines.spark.split(".")[:2])
    runtime = f"iceberg-spark-runtime-{spark_minor}_2.13"
    key = spark_jars_key(engines)

    def build() -> cache.Entry:
        notes: list[str] = []
        obtained = engines.iceberg
        if not maven.exists(maven.Coordinate("org.apache.iceberg", runtime, engines.iceberg)):
            obtained = maven.latest("org.apache.iceberg", runtime)
            notes.append(f"{runtime}:{engines.iceberg} is not served; using {obtained}, the newest served")
        jars = [maven.fetch(maven.Coordinate("org.apache.iceberg", runtime, obtained)),
                maven.fetch(maven.Coordinate("org.apache.iceberg", "iceberg-aws-bundle", obtained))]
        root = jars[0].parents[2]  # .../maven/org/apache/iceberg
        files = {str(j.relative_to(root)): cache.file_record(j) for j in jars}
        return {
            "name": "spark-jars", "requested": f"spark {engines.spark}, iceberg {engines.iceberg}",
            "version": obtained, "path": str(jars[0]), "root": str(root), "files": files,
            "sha256": cache.tree_digest(files), "classpath": [str(j) for j in jars], "source": maven.MAVEN_REPO,
            "notes": notes,
        }

    return cache.obtain(key, build)


#: In load order: iceberg needs avro (and httpfs for s3://) loaded first, or it tries to install them.
DUCKDB_EXTENSIONS = ("httpfs", "avro", "iceberg")


@dataclass(frozen=True)
class DuckDBExtensions:
    """``.duckdb_extension`` files shipped by the ``duckdb-ext-*`` PyPI packages, keyed by extension name."""

    duckdb_version: str
    paths: Mapping[str, Path] = field(default_factory=dict)

    def load_statements(self) -> list[str]:
        """SQL that forbids any extension download, points DuckDB's extension directory at the packages
        (so an extension another one autoloads is found there) and loads each, dependencies first."""
        directories = {path.parents[2] for path in self.paths.values()}
        statements = ["SET autoinstall_known_extensions = false"]
        if len(directories) == 1:
            statements.append(f"SET extension_directory = '{directories.pop()}'")
        return statements + [f"LOAD '{path}'" for path in self.paths.values()]


def duckdb_extensions(names: tuple[str, ...] = DUCKDB_EXTENSIONS) -> DuckDBExtensions:
    """Paths of the ``.duckdb_extension`` files installed by the ``duckdb-ext-<name>`` packages.

    Nothing is downloaded: the packages are the project's dependencies. Raises ``ArtifactError`` when a
    package is missing or was built for another DuckDB than the installed one.
    """
    try:
        duckdb_version = importlib.metadata.version("duckdb")
    except importlib.metadata.PackageNotFoundError as error:
        raise ArtifactError("duckdb is not installed in this Python; run `make venv`") from error
    paths: dict[str, Path] = {}
    for name in names:
        package = f"duckdb-ext-{name}"
        try:
            distribution = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError as error:
            raise ArtifactError(f"{package} is not installed; run `make venv`") from error
        if not distribution.version.startswith(duckdb_version + "."):
            raise ArtifactError(f"{package} {distribution.version} does not match duckdb {duckdb_version}")
        found = [f for f in distribution.files or () if f.name == f"{name}.duckdb_extension"]
        if not found:
            raise ArtifactError(f"{package} ships no {name}.duckdb_extension")
        paths[name] = Path(str(found[0].locate())).resolve()
    return DuckDBExtensions(duckdb_version=duckdb_version, paths=paths)


def duckdb_artifact() -> Artifact:
    """The DuckDB extensions' copy in the cache as an artifact row (for the fetch table)."""
    found = cache.lookup(duckdb_key())
    if found is None:
        raise ArtifactError("the DuckDB extensions are not in the cache: run `make artifacts`")
    return found


def duckdb_key(names: tuple[str, ...] = DUCKDB_EXTENSIONS) -> str:
    """The cache key of the extensions for the installed DuckDB (its version names the copy)."""
    try:
        version = importlib.metadata.version("duckdb")
    except importlib.metadata.PackageNotFoundError as error:
        raise ArtifactError("duckdb is not installed in this Python; run `make venv`") from error
    return f"duckdb-extensions:{version}:{','.join(names)}"


def _from_entry(entry_path: Path, version: str, names: tuple[str, ...]) -> DuckDBExtensions:
    found = {name: next(entry_path.glob(f"*/*/{name}.duckdb_extension")) for name in names}
    return DuckDBExtensions(duckdb_version=version, paths=found)


def cached_duckdb_extensions(names: tuple[str, ...] = DUCKDB_EXTENSIONS) -> DuckDBExtensions | None:
    """The extensions' copy in the cache for the installed DuckDB (what stack outputs point at), or None."""
    found = cache.lookup(duckdb_key(names))
    return _from_entry(found.path, found.version, names) if found is not None else None


def fetch_duckdb_extensions(names: tuple[str, ...] = DUCKDB_EXTENSIONS) -> DuckDBExtensions:
    """The extensions of the ``duckdb-ext-*`` packages copied into the cache (the directory layout DuckDB reads)."""
    import shutil

    def build() -> cache.Entry:
        installed = duckdb_extensions(names)
        source = {path.parents[2] for path in installed.paths.values()}.pop()
        root = cache.cache_root() / "duckdb-extensions" / installed.duckdb_version
        shutil.rmtree(root, ignore_errors=True)
        for path in installed.paths.values():
            target = root / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        files = cache.tree_files(root)
        return {"name": "duckdb-extensions", "requested": ", ".join(names), "version": installed.duckdb_version,
                "path": str(root), "root": str(root), "files": files, "sha256": cache.tree_digest(files),
                "source": "PyPI (duckdb-ext-* packages of the project's venv)"}

    found = cache.obtain(duckdb_key(names), build)
    return _from_entry(found.path, found.version, names)
