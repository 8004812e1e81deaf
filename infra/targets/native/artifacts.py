"""Artifacts of the ``native`` target, fetched once into a cache outside the repo and checksum-verified.

The native target runs every service as a local process on 127.0.0.1. This module obtains what those
processes are made of, and nothing else:

========================  ==================================================================
``ensure_seaweedfs``      ``weed`` built from the Go module proxy (SeaweedFS tags are not semver)
``ensure_postgres``       PostgreSQL server binaries from Debian packages (``apt-get``)
``ensure_rest_fixture``   Apache Iceberg REST catalog fixture (Maven Central) + a loopback launcher
``ensure_trino``          Trino server tarball (Maven Central), unpacked with unused plugins removed
``ensure_spark_jars``     Iceberg Spark runtime + AWS bundle jars (Maven Central); pyspark is the venv's
``duckdb_extensions``     iceberg/httpfs/avro ``.duckdb_extension`` files shipped by PyPI packages
``find_java``             a JDK home of at least a given major version
========================  ==================================================================

The cache lives in ``${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform}/artifacts``, so a fresh clone on the
same machine (CI) finds it warm. Every file fetched from Maven Central is checked against the published
``.sha512`` (or ``.sha1``) before it is kept; the sha256 of everything kept is recorded in
``manifest.json`` beside it and checked again on reuse, so a warm call costs a hash of the files and no
network. Each ``ensure_*`` is idempotent and safe to call from concurrent processes (a file lock
serialises them).

CLI: ``python -m infra.targets.native.artifacts fetch [--only NAME]`` fetches everything and prints a table.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import requests
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

# --------------------------------------------------------------------------------------------------
# Pins of the native target, and what each one resolves to where the registry spells it differently.
# --------------------------------------------------------------------------------------------------

SEAWEEDFS_VERSION = "4.45"
POSTGRES_MAJOR = "18"
REST_FIXTURE_VERSION = "1.10.1"
TRINO_VERSION = "476"  # newest trino-server tarball on Maven Central; the docker target pins 483
SPARK_VERSION = "4.1.3"  # pyspark in the venv
ICEBERG_VERSION = "1.11.0"  # Iceberg as a library (Spark runtime, AWS bundle)
DUCKDB_VERSION = "1.4.4"  # newest DuckDB with extensions on PyPI (duckdb-ext-*==1.4.4.20260205)

SEAWEEDFS_MODULE = "github.com/seaweedfs/seaweedfs"
#: SeaweedFS release -> Go module version the proxy serves. The proxy has no tag for SeaweedFS
#: releases; this pseudo-version is the one that resolves. NOTE: its source says 4.53, not 4.45
#: (weed/util/version/constants.go); ``Artifact.version`` reports what ``weed version`` prints.
SEAWEEDFS_MODULE_VERSIONS: Mapping[str, str] = {
    "4.45": "v0.0.0-20261109003541-7506e5f91cd6",
}

#: Trino plugins kept after unpacking; the server starts with only these (everything else is removed).
TRINO_PLUGINS = ("iceberg",)

#: Java majors each consumer needs.
JAVA_FOR_TRINO = 24
JAVA_FOR_JVM_SERVICES = 17

MAVEN_REPO = os.environ.get("LAKEHOUSE_MAVEN_REPO", "https://repo1.maven.org/maven2").rstrip("/")
HTTP_TIMEOUT = (15, 120)  # connect, read (seconds)
CHUNK = 1 << 20

console = Console(stderr=True)


class ArtifactError(RuntimeError):
    """An artifact could not be obtained or failed verification; the message says what to do."""


@dataclass(frozen=True)
class Artifact:
    """One thing the native target runs, as found in the cache.

    ``path`` is the one path a launcher needs (a binary, a home directory, a bin directory or a jar);
    ``classpath``/``main_class`` are set for JVM programs started with ``java -cp``.
    """

    name: str
    requested: str
    version: str
    path: Path
    size_bytes: int
    sha256: str
    classpath: tuple[Path, ...] = ()
    main_class: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DuckDBExtensions:
    """``.duckdb_extension`` files shipped by the ``duckdb-ext-*`` PyPI packages, keyed by extension name.

    Load them with no download, by path (``paths`` is in dependency order: httpfs, avro, iceberg)::

        for statement in exts.load_statements():
            con.execute(statement)

    or by name, pointing DuckDB at the packages' directory (``duckdb_extension_dir()``)::

        con.execute(f"SET extension_directory = '{duckdb_extension_dir()}'")
        con.execute("LOAD iceberg")
    """

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


# --------------------------------------------------------------------------------------------------
# Cache, manifest, lock, hashing
# --------------------------------------------------------------------------------------------------


def cache_root() -> Path:
    """``${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform}/artifacts``, created if missing."""
    base = Path(os.environ.get("LAKEHOUSE_CACHE") or Path.home() / ".cache" / "lakehouse-platform")
    root = base.expanduser() / "artifacts"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold the lock named ``name``: concurrent fetches of one artifact (a developer and CI) wait
    instead of racing, while different artifacts proceed in parallel."""
    locks = cache_root() / ".locks"
    locks.mkdir(exist_ok=True)
    with open(locks / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _manifest_path() -> Path:
    return cache_root() / "manifest.json"


def _load_manifest() -> dict[str, Entry]:
    path = _manifest_path()
    if not path.exists():
        return {}
    try:
        manifest: dict[str, Entry] = json.loads(path.read_text())
        return manifest
    except json.JSONDecodeError:
        console.print(f"[yellow]{path} is not JSON; starting a new manifest[/]")
        return {}


def _record(key: str, entry: Entry) -> None:
    """Write one manifest entry atomically, under the manifest's own lock."""
    with _locked("manifest"):
        manifest = _load_manifest()
        manifest[key] = entry
        tmp = _manifest_path().with_suffix(f".json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, _manifest_path())


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


#: A manifest entry, as stored in manifest.json.
Entry = dict[str, Any]
#: ``{relative path: {"sha256": hex, "size": bytes}}`` of the files an entry owns.
FileRecords = dict[str, dict[str, Any]]


def _file_record(path: Path) -> dict[str, Any]:
    return {"sha256": _sha256_file(path), "size": path.stat().st_size}


def _tree_files(root: Path) -> FileRecords:
    """Records of every regular file under ``root`` (symlinks skipped)."""
    return {
        str(path.relative_to(root)): _file_record(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def _tree_digest(files: FileRecords) -> str:
    """One sha256 naming a whole tree: over its sorted ``path sha256`` lines."""
    lines = "".join(f"{name} {meta['sha256']}\n" for name, meta in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def _verified(entry: Entry | None) -> bool:
    """True when every file the manifest entry recorded is present with its recorded size and sha256."""
    if not entry:
        return False
    root = Path(entry["root"])
    for name, meta in entry["files"].items():
        path = root / name
        try:
            if path.stat().st_size != meta["size"] or _sha256_file(path) != meta["sha256"]:
                console.print(f"[yellow]{path} differs from the manifest; fetching it again[/]")
                return False
        except FileNotFoundError:
            return False
    return True


def _artifact_from(entry: Entry) -> Artifact:
    files = entry["files"]
    return Artifact(
        name=entry["name"],
        requested=entry["requested"],
        version=entry["version"],
        path=Path(entry["path"]),
        size_bytes=sum(int(meta["size"]) for meta in files.values()) if files else int(entry.get("size", 0)),
        sha256=entry["sha256"],
        classpath=tuple(Path(p) for p in entry.get("classpath", ())),
        main_class=entry.get("main_class"),
        notes=tuple(entry.get("notes", ())),
    )


def _cached(key: str) -> Artifact | None:
    entry = _load_manifest().get(key)
    return _artifact_from(entry) if entry and _verified(entry) else None


# --------------------------------------------------------------------------------------------------
# Downloads
# --------------------------------------------------------------------------------------------------


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold blue]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _download(url: str, dest: Path, expected: tuple[str, str]) -> str:
    """Stream ``url`` to ``dest`` with a progress bar; check ``expected`` = (algorithm, hex); return sha256.

    The file appears at ``dest`` only once its checksum matched.
    """
    algorithm, want = expected
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".part")
    check, sha256 = hashlib.new(algorithm), hashlib.sha256()
    with requests.get(url, stream=True, timeout=HTTP_TIMEOUT) as response:
        if response.status_code != 200:
            raise ArtifactError(f"GET {url} answered {response.status_code}")
        total = int(response.headers.get("content-length") or 0) or None
        with _progress() as progress, open(partial, "wb") as out:
            task = progress.add_task(dest.name, total=total)
            for chunk in response.iter_content(CHUNK):
                out.write(chunk)
                check.update(chunk)
                sha256.update(chunk)
                progress.advance(task, len(chunk))
    if check.hexdigest() != want.lower():
        partial.unlink(missing_ok=True)
        raise ArtifactError(f"{url}: {algorithm} {check.hexdigest()} but the repository publishes {want}")
    os.replace(partial, dest)
    return sha256.hexdigest()


def _maven_url(group: str, artifact: str, version: str, classifier: str | None, ext: str) -> str:
    suffix = f"-{classifier}" if classifier else ""
    return f"{MAVEN_REPO}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}{suffix}.{ext}"


def _published_checksum(url: str) -> tuple[str, str]:
    """The repository's own checksum of ``url``: ``.sha512`` when published, else ``.sha1``."""
    for algorithm in ("sha512", "sha1"):
        response = requests.get(f"{url}.{algorithm}", timeout=HTTP_TIMEOUT)
        if response.status_code == 200 and response.text.strip():
            return algorithm, response.text.split()[0]
    raise ArtifactError(f"{url}: neither .sha512 nor .sha1 is published, refusing an unverified download")


def _maven_exists(group: str, artifact: str, version: str, classifier: str | None = None, ext: str = "jar") -> bool:
    url = _maven_url(group, artifact, version, classifier, ext)
    return requests.head(url, timeout=HTTP_TIMEOUT, allow_redirects=True).status_code == 200


def _maven_latest(group: str, artifact: str) -> str:
    """The ``<release>`` (else ``<latest>``) version in the artifact's maven-metadata.xml."""
    url = f"{MAVEN_REPO}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    response = requests.get(url, timeout=HTTP_TIMEOUT)
    match = re.search(r"<release>([^<]+)</release>", response.text) or re.search(
        r"<latest>([^<]+)</latest>", response.text
    )
    if response.status_code != 200 or not match:
        raise ArtifactError(f"{url} answered {response.status_code} with no release version")
    return match.group(1)


def maven_cache_path(group: str, artifact: str, version: str, classifier: str | None = None, ext: str = "jar") -> Path:
    """Where a Maven Central file lives in the cache (``maven/<group path>/<artifact>/<version>/``)."""
    url = _maven_url(group, artifact, version, classifier, ext)
    return cache_root() / "maven" / group.replace(".", "/") / artifact / version / url.rsplit("/", 1)[1]


def _maven_file(group: str, artifact: str, version: str, classifier: str | None = None, ext: str = "jar") -> Path:
    """One Maven Central file in the cache (``maven_cache_path``), verified."""
    key = f"maven:{group}:{artifact}:{version}:{classifier or ''}:{ext}"
    url = _maven_url(group, artifact, version, classifier, ext)
    dest = maven_cache_path(group, artifact, version, classifier, ext)
    with _locked(key):
        if _verified(_load_manifest().get(key)):
            return dest
        sha256 = _download(url, dest, _published_checksum(url))
        _record(
        key,
        {
                "name": artifact,
                "requested": version,
                "version": version,
                "path": str(dest),
                "root": str(dest.parent),
                "files": {dest.name: {"sha256": sha256, "size": dest.stat().st_size}},
                "sha256": sha256,
                "source": url,
            },
        )
    return dest


# --------------------------------------------------------------------------------------------------
# Java
# --------------------------------------------------------------------------------------------------


@cache
def _java_major(home: Path) -> int | None:
    """Major version printed by ``<home>/bin/java -version`` (``1.8.0_x`` -> 8), or None."""
    java = home / "bin" / "java"
    if not os.access(java, os.X_OK):
        return None
    try:
        result = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java(min_major: int) -> Path:
    """Home of the JDK with the lowest major version >= ``min_major`` among ``$JAVA_HOME`` and ``/usr/lib/jvm/*``.

    The lowest satisfying major is the one the consumer is most likely tested with (Spark on 17, Trino on
    24+). Symlinked duplicates count once. Raises ``ArtifactError`` listing what was found.
    """
    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted(p for p in jvm.iterdir() if p.is_dir()))
    found: dict[Path, int] = {}
    for home in candidates:
        real = home.resolve()
        major = _java_major(real)
        if major is not None and real not in found:
            found[real] = major
    fitting = sorted((major, str(home)) for home, major in found.items() if major >= min_major)
    if not fitting:
        seen = ", ".join(f"{home} ({major})" for home, major in found.items()) or "none"
        raise ArtifactError(
            f"no JDK >= {min_major} in $JAVA_HOME or /usr/lib/jvm (found: {seen}); "
            f"install one, e.g. apt-get install openjdk-{min_major}-jdk-headless, or set JAVA_HOME"
        )
    return Path(fitting[0][1])


# --------------------------------------------------------------------------------------------------
# SeaweedFS
# --------------------------------------------------------------------------------------------------


def _go_env() -> dict[str, str]:
    """Environment for ``go``: module and build caches inside our cache, no toolchain download, static."""
    root = cache_root() / "go"
    return {
        **os.environ,
        "GOMODCACHE": str(root / "mod"),
        "GOCACHE": str(root / "build"),
        "GOFLAGS": "-buildvcs=false -modcacherw",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }


def ensure_seaweedfs(version: str = SEAWEEDFS_VERSION) -> Artifact:
    """``weed`` built from the Go module proxy for the SeaweedFS release ``version``.

    ``go install module/weed@version`` is refused for this module (its go.mod has replace directives),
    so the module is downloaded into our GOMODCACHE and built from its own directory, where go.mod and
    go.sum apply. A cold build takes minutes on 2 cores; the build cache makes a rebuild fast.
    """
    key = f"seaweedfs:{version}"
    with _locked(key):
        if cached := _cached(key):
            return cached
        if version not in SEAWEEDFS_MODULE_VERSIONS:
            raise ArtifactError(
                f"no Go module version known for SeaweedFS {version}; add it to SEAWEEDFS_MODULE_VERSIONS "
                f"(known: {', '.join(SEAWEEDFS_MODULE_VERSIONS)})"
            )
        if not shutil.which("go"):
            raise ArtifactError("the go toolchain is needed to build SeaweedFS; install Go 1.26+")
        module_version = SEAWEEDFS_MODULE_VERSIONS[version]
        env = _go_env()
        console.print(f"[bold]seaweedfs[/]: go mod download {SEAWEEDFS_MODULE}@{module_version}")
        downloaded = _run(
            ["go", "mod", "download", "-json", f"{SEAWEEDFS_MODULE}@{module_version}"], env=env, cwd=cache_root()
        )
        source = Path(json.loads(downloaded)["Dir"])
        out_dir = cache_root() / "seaweedfs" / version
        out_dir.mkdir(parents=True, exist_ok=True)
        binary = out_dir / "weed"
        commit = module_version.rsplit("-", 1)[-1]
        ldflags = f"-s -w -X {SEAWEEDFS_MODULE}/weed/util/version.COMMIT={commit}"
        console.print("[bold]seaweedfs[/]: go build ./weed (cold: ~7 minutes on 2 cores)")
        started = time.monotonic()
        _run(
            ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(binary) + ".part", "./weed"],
            env=env,
            cwd=source,
        )
        build_seconds = round(time.monotonic() - started, 1)
        os.replace(str(binary) + ".part", binary)
        printed = _run([str(binary), "version"]).strip()
        match = re.search(r"\b(\d+\.\d+)\b", printed)
        obtained = match.group(1) if match else printed
        sha256 = _sha256_file(binary)
        notes = [f"weed version: {printed}", f"go module {SEAWEEDFS_MODULE}@{module_version}"]
        if obtained != version:
            notes.append(f"pin {version} resolves to source version {obtained}")
        entry = {
            "name": "seaweedfs",
            "requested": version,
            "version": obtained,
            "path": str(binary),
            "root": str(out_dir),
            "files": {"weed": _file_record(binary)},
            "sha256": sha256,
            "source": f"{SEAWEEDFS_MODULE}@{module_version}",
            "build_seconds": build_seconds,
            "notes": notes,
        }
        _record(key, entry)
        return _artifact_from(entry)


def _run(argv: list[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run a command, return its stdout; on failure raise with its stderr tail."""
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip()[-2000:]
        raise ArtifactError(f"{' '.join(argv)} exited {result.returncode}:\n{tail}")
    return result.stdout


# --------------------------------------------------------------------------------------------------
# PostgreSQL (Debian packages)
# --------------------------------------------------------------------------------------------------


def _pg_installed() -> dict[int, Path]:
    found: dict[int, Path] = {}
    for bindir in Path("/usr/lib/postgresql").glob("*/bin"):
        if bindir.parent.name.isdigit() and (bindir / "postgres").exists() and (bindir / "initdb").exists():
            found[int(bindir.parent.name)] = bindir
    return found


def _apt_majors(wanted: int, oldest: int = 13) -> dict[int, str]:
    """``{major: candidate version}`` apt offers for postgresql-<major>, ``wanted`` down to ``oldest``."""
    packages = [f"postgresql-{m}" for m in range(wanted, oldest - 1, -1)]
    result = subprocess.run(["apt-cache", "policy", *packages], capture_output=True, text=True)
    offered: dict[int, str] = {}
    for match in re.finditer(r"^postgresql-(\d+):\n(?:\s+.*\n)*?\s+Candidate:\s*(\S+)", result.stdout, re.M):
        if match.group(2) != "(none)":
            offered[int(match.group(1))] = match.group(2)
    return offered


def ensure_postgres(major: str = POSTGRES_MAJOR) -> Artifact:
    """PostgreSQL server binaries: ``/usr/lib/postgresql/<N>/bin`` for the newest N <= ``major`` apt offers.

    Debian 12 offers 15, so pin 18 yields 15 (said in ``notes``). The package is installed with
    ``apt-get`` (root needed) under a ``policy-rc.d`` that forbids starting services, and the cluster
    Debian creates on install is dropped: the platform runs its own ``initdb`` cluster.
    """
    wanted = int(major)
    with _locked("postgres"):
        installed = _pg_installed()
        chosen = wanted if wanted in installed else None
        if chosen is None:
            offered = _apt_majors(wanted)
            if not offered:
                _run(["apt-get", "update"])
                offered = _apt_majors(wanted)
            best_offered = max(offered, default=None)
            best_installed = max((m for m in installed if m <= wanted), default=None)
            if best_installed is not None and (best_offered is None or best_installed >= best_offered):
                chosen = best_installed
            elif best_offered is not None:
                _apt_install_postgres(best_offered)
                chosen = best_offered
            else:
                raise ArtifactError(f"apt offers no postgresql-N package with N <= {wanted}")
        bindir = _pg_installed()[chosen]
        printed = _run([str(bindir / "postgres"), "--version"]).strip()
        match = re.search(r"\)\s*(\d+(?:\.\d+)*)", printed)
        obtained = match.group(1) if match else printed
        notes = [printed]
        if chosen != wanted:
            notes.append(f"pin {major} not offered by apt; using {chosen}, the newest it offers")
        binary = bindir / "postgres"
        sha256 = _sha256_file(binary)
        entry: Entry = {
            "name": "postgres",
            "requested": major,
            "version": obtained,
            "path": str(bindir),
            "root": str(bindir),
            "files": {},  # apt owns these files: recorded, not re-verified (an apt upgrade may change them)
            "size": sum(p.stat().st_size for p in bindir.iterdir() if p.is_file()),
            "sha256": sha256,
            "source": f"apt postgresql-{chosen}",
            "notes": notes,
        }
        if _load_manifest().get(f"postgres:{major}") != entry:
            _record(f"postgres:{major}", entry)
        return _artifact_from(entry)


def _apt_install_postgres(major: int) -> None:
    """``apt-get install postgresql-<major>`` without starting it; drop the cluster Debian creates."""
    if os.geteuid() != 0:
        raise ArtifactError(
            f"postgresql-{major} is not installed; run as root or: sudo apt-get install postgresql-{major}"
        )
    policy = Path("/usr/sbin/policy-rc.d")
    ours = not policy.exists()
    if ours:
        policy.write_text("#!/bin/sh\n# lakehouse-platform: no service starts during package installs\nexit 101\n")
        policy.chmod(0o755)
    console.print(f"[bold]postgres[/]: apt-get install postgresql-{major}")
    try:
        _run(
            ["apt-get", "install", "-y", "--no-install-recommends", f"postgresql-{major}"],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    finally:
        if ours:
            policy.unlink(missing_ok=True)
    clusters = _run(["pg_lsclusters", "--no-header"]) if shutil.which("pg_lsclusters") else ""
    for line in clusters.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == str(major) and parts[1] == "main":
            _run(["pg_dropcluster", "--stop", str(major), "main"])


# --------------------------------------------------------------------------------------------------
# Iceberg REST catalog fixture
# --------------------------------------------------------------------------------------------------

REST_FIXTURE_UPSTREAM_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
REST_FIXTURE_MAIN = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"

#: The upstream server listens on every interface (``new Server(port)``) with SO_REUSEPORT, so a second
#: copy would silently share the port. This launcher runs the same catalog and servlet but binds one
#: address: ``rest.host`` (env ``CATALOG_REST_HOST``, default 127.0.0.1) and ``rest.port``
#: (``CATALOG_REST_PORT``, default 8181), without SO_REUSEPORT. It lives in the fixture's package to
#: reach its package-private classes.
_LOOPBACK_LAUNCHER_JAVA = """\
package org.apache.iceberg.rest;

import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.Map;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/** RESTCatalogServer bound to rest.host:rest.port (default 127.0.0.1:8181); generated by artifacts.py. */
public final class LoopbackRESTCatalogServer {
  private LoopbackRESTCatalogServer() {}

  public static void main(String[] args) throws Exception {
    Method init = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
    init.setAccessible(true);
    RESTCatalogServer.CatalogContext context = (RESTCatalogServer.CatalogContext) init.invoke(new RESTCatalogServer());
    Map<String, String> conf = context.configuration();
    String host = conf.getOrDefault("rest.host", "127.0.0.1");
    int port = Integer.parseInt(conf.getOrDefault("rest.port", "8181"));
    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTServerCatalogAdapter(context))), "/*");
    handler.insertHandler(new GzipHandler());
    Server server = new Server(new InetSocketAddress(host, port));
    server.setHandler(handler);
    server.setStopAtShutdown(true);
    server.start();
    server.join();
  }
}
"""


def ensure_rest_fixture(version: str = REST_FIXTURE_VERSION) -> Artifact:
    """The Iceberg REST catalog fixture ``version``: a classpath (loopback launcher + runtime jar) and main class.

    ``org.apache.iceberg:iceberg-open-api:<version>`` (no classifier) is the shaded fixture runtime: the
    test fixtures with iceberg-core, iceberg-aws + AWS SDK (S3FileIO), sqlite-jdbc and Jetty in one jar.
    The launcher is compiled here from ``_LOOPBACK_LAUNCHER_JAVA`` with a JDK >= 17.
    """
    key = f"rest-fixture:{version}"
    with _locked(key):
        if cached := _cached(key):
            return cached
        jar = _maven_file("org.apache.iceberg", "iceberg-open-api", version)
        with zipfile.ZipFile(jar) as archive:
            names = set(archive.namelist())
        for needed in ("org/apache/iceberg/rest/RESTCatalogServer.class", "org/apache/iceberg/aws/s3/S3FileIO.class"):
            if needed not in names:
                raise ArtifactError(f"{jar} has no {needed}: not the fixture runtime jar")
        launcher = _compile_launcher(jar, cache_root() / "rest-fixture" / version)
        files = {
            jar.name: _file_record(jar),
            launcher.name: _file_record(launcher),
        }
        # Both files are recorded relative to one root: link the jar beside the launcher.
        link = launcher.parent / jar.name
        if not link.exists():
            link.symlink_to(os.path.relpath(jar, link.parent))
        entry = {
            "name": "rest-fixture",
            "requested": version,
            "version": version,
            "path": str(jar),
            "root": str(launcher.parent),
            "files": files,
            "sha256": files[jar.name]["sha256"],
            "classpath": [str(launcher), str(jar)],
            "main_class": REST_FIXTURE_MAIN,
            "source": _maven_url("org.apache.iceberg", "iceberg-open-api", version, None, "jar"),
            "notes": [f"upstream main {REST_FIXTURE_UPSTREAM_MAIN} binds 0.0.0.0; {REST_FIXTURE_MAIN} binds rest.host"],
        }
        _record(key, entry)
        return _artifact_from(entry)


def _compile_launcher(fixture_jar: Path, out_dir: Path) -> Path:
    jdk = find_java(JAVA_FOR_JVM_SERVICES)
    javac, jar_tool = jdk / "bin" / "javac", jdk / "bin" / "jar"
    if not javac.exists():
        raise ArtifactError(f"{jdk} is a JRE without javac; a JDK >= {JAVA_FOR_JVM_SERVICES} is needed")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as work:
        source = Path(work) / "LoopbackRESTCatalogServer.java"
        source.write_text(_LOOPBACK_LAUNCHER_JAVA)
        classes = Path(work) / "classes"
        _run([str(javac), "--release", "17", "-cp", str(fixture_jar), "-d", str(classes), str(source)])
        launcher = out_dir / "loopback-launcher.jar"
        # A fixed timestamp keeps the jar's bytes (and sha256) the same on every build.
        partial = str(launcher) + ".part"
        _run([str(jar_tool), "--create", "--date=2020-01-01T00:00:00Z", "--file", partial, "-C", str(classes), "."])
        os.replace(partial, launcher)
    return launcher


# --------------------------------------------------------------------------------------------------
# Trino
# --------------------------------------------------------------------------------------------------


def ensure_trino(version: str = TRINO_VERSION, plugins: tuple[str, ...] = TRINO_PLUGINS) -> Artifact:
    """Trino server ``version`` unpacked into the cache with only ``plugins`` kept; ``path`` is its home.

    The tarball (~820 MB) is verified against its published checksum, unpacked, and deleted. Run it with
    a JDK from ``find_java(JAVA_FOR_TRINO)``.
    """
    key = f"trino:{version}:{','.join(sorted(plugins))}"
    with _locked(key):
        if cached := _cached(key):
            return cached
        url = _maven_url("io.trino", "trino-server", version, None, "tar.gz")
        tarball = _maven_file("io.trino", "trino-server", version, None, "tar.gz")
        tar_sha256 = _load_manifest()[f"maven:io.trino:trino-server:{version}::tar.gz"]["sha256"]
        home = cache_root() / "trino" / f"trino-server-{version}"
        staging = home.with_name(home.name + ".unpacking")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        staging.mkdir(parents=True)
        console.print(f"[bold]trino[/]: unpacking {tarball.name} (plugins kept: {', '.join(plugins)})")
        # Everything is unpacked, then unused plugins are removed: jars shared by plugins are stored as
        # hard links to the first plugin holding them, which may be one that is removed.
        with tarfile.open(tarball, "r|gz") as archive:
            archive.extractall(staging, filter="data")
        unpacked = staging / f"trino-server-{version}"
        for plugin in (unpacked / "plugin").iterdir():
            if plugin.name not in plugins:
                shutil.rmtree(plugin)
        os.replace(unpacked, home)
        staging.rmdir()
        tarball.unlink()  # ~820 MB; its sha256 stays in the manifest
        files = _tree_files(home)
        entry = {
            "name": "trino",
            "requested": version,
            "version": version,
            "path": str(home),
            "root": str(home),
            "files": files,
            "sha256": _tree_digest(files),
            "source": url,
            "tarball_sha256": tar_sha256,
            "notes": [f"plugins kept: {', '.join(plugins)}"],
        }
        _record(key, entry)
        return _artifact_from(entry)


# --------------------------------------------------------------------------------------------------
# Spark jars
# --------------------------------------------------------------------------------------------------


def ensure_spark_jars(spark_version: str = SPARK_VERSION, iceberg_version: str = ICEBERG_VERSION) -> Artifact:
    """Iceberg's Spark runtime for Spark ``major.minor`` (Scala 2.13) and Iceberg's AWS bundle.

    ``classpath`` holds both jars (for ``spark.jars``). When Maven Central has no runtime of
    ``iceberg_version`` for this Spark, the newest it has is taken and ``notes`` says so.
    """
    spark_minor = ".".join(spark_version.split(".")[:2])
    runtime = f"iceberg-spark-runtime-{spark_minor}_2.13"
    key = f"spark-jars:{spark_version}:{iceberg_version}"
    with _locked(key):
        if cached := _cached(key):
            return cached
        notes: list[str] = []
        obtained = iceberg_version
        if not _maven_exists("org.apache.iceberg", runtime, iceberg_version):
            obtained = _maven_latest("org.apache.iceberg", runtime)
            notes.append(f"{runtime}:{iceberg_version} is not served; using {obtained}, the newest served")
        jars = [
            _maven_file("org.apache.iceberg", runtime, obtained),
            _maven_file("org.apache.iceberg", "iceberg-aws-bundle", obtained),
        ]
        root = jars[0].parents[2]  # .../maven/org/apache/iceberg
        files = {str(j.relative_to(root)): _file_record(j) for j in jars}
        entry = {
            "name": "spark-jars",
            "requested": f"spark {spark_version}, iceberg {iceberg_version}",
            "version": obtained,
            "path": str(jars[0]),
            "root": str(root),
            "files": files,
            "sha256": _tree_digest(files),
            "classpath": [str(j) for j in jars],
            "source": MAVEN_REPO,
            "notes": notes,
        }
        _record(key, entry)
        return _artifact_from(entry)


def flink_runtime_coordinates(flink_version: str, iceberg_version: str = ICEBERG_VERSION) -> tuple[str, str, str]:
    """Maven coordinates of Iceberg's Flink runtime for Flink ``major.minor``."""
    minor = ".".join(flink_version.split(".")[:2])
    return "org.apache.iceberg", f"iceberg-flink-runtime-{minor}", iceberg_version


def ensure_flink_runtime(flink_version: str = "2.1.3", iceberg_version: str = ICEBERG_VERSION) -> Artifact:
    """Iceberg's Flink runtime jar, which the lab's Flink containers mount (docker target)."""
    group, artifact, version = flink_runtime_coordinates(flink_version, iceberg_version)
    path = _maven_file(group, artifact, version)
    return Artifact(name="flink-runtime", requested=f"flink {flink_version}, iceberg {iceberg_version}",
                    version=version, path=path, size_bytes=path.stat().st_size, sha256=_sha256_file(path))


# --------------------------------------------------------------------------------------------------
# DuckDB extensions (PyPI packages)
# --------------------------------------------------------------------------------------------------

#: In load order: iceberg needs avro (and httpfs for s3://) loaded first, or it tries to install them.
DUCKDB_EXTENSIONS = ("httpfs", "avro", "iceberg")


def duckdb_extensions(names: tuple[str, ...] = DUCKDB_EXTENSIONS) -> DuckDBExtensions:
    """Paths of the ``.duckdb_extension`` files installed by the ``duckdb-ext-<name>`` packages.

    Nothing is downloaded: the packages come from requirements.txt. Raises ``ArtifactError`` when a
    package is missing or was built for another DuckDB than the installed one.
    """
    try:
        duckdb_version = importlib.metadata.version("duckdb")
    except importlib.metadata.PackageNotFoundError as error:
        raise ArtifactError("duckdb is not installed in this Python; pip install -r requirements.txt") from error
    paths: dict[str, Path] = {}
    for name in names:
        package = f"duckdb-ext-{name}"
        try:
            distribution = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError as error:
            raise ArtifactError(f"{package} is not installed; pip install -r requirements.txt") from error
        if not distribution.version.startswith(duckdb_version + "."):
            raise ArtifactError(f"{package} {distribution.version} does not match duckdb {duckdb_version}")
        found = [f for f in distribution.files or () if f.name == f"{name}.duckdb_extension"]
        if not found:
            raise ArtifactError(f"{package} ships no {name}.duckdb_extension")
        paths[name] = Path(str(found[0].locate())).resolve()
    return DuckDBExtensions(duckdb_version=duckdb_version, paths=paths)


def duckdb_extension_dir() -> Path:
    """The packages' ``duckdb_ext/extensions`` directory, laid out as DuckDB's own extension directory
    (``<dir>/v<duckdb>/<platform>/<name>.duckdb_extension``): ``SET extension_directory = '<dir>'`` then
    ``LOAD iceberg`` finds the packaged file by name."""
    dirs = {p.parents[2] for p in duckdb_extensions().paths.values()}
    if len(dirs) != 1:
        raise ArtifactError(f"the duckdb-ext packages are in more than one directory: {sorted(map(str, dirs))}")
    return dirs.pop()


def _duckdb_artifact() -> Artifact:
    exts = duckdb_extensions()
    files = {name: _file_record(path) for name, path in exts.paths.items()}
    return Artifact(
        name="duckdb-extensions",
        requested=DUCKDB_VERSION,
        version=exts.duckdb_version,
        path=duckdb_extension_dir(),
        size_bytes=sum(int(m["size"]) for m in files.values()),
        sha256=_tree_digest(files),
        classpath=tuple(exts.paths.values()),
        notes=tuple(f"{n}: {p}" for n, p in exts.paths.items()),
    )


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------

#: Fetched only on request (``--only``): what the docker lab mounts, not what the native target runs.
LAB_ONLY = ("flink-runtime",)

FETCHERS: dict[str, Callable[[], Artifact]] = {
    "flink-runtime": lambda: ensure_flink_runtime(),
    "seaweedfs": lambda: ensure_seaweedfs(SEAWEEDFS_VERSION),
    "postgres": lambda: ensure_postgres(POSTGRES_MAJOR),
    "rest-fixture": lambda: ensure_rest_fixture(REST_FIXTURE_VERSION),
    "trino": lambda: ensure_trino(TRINO_VERSION),
    "spark-jars": lambda: ensure_spark_jars(SPARK_VERSION, ICEBERG_VERSION),
    "duckdb-extensions": _duckdb_artifact,
}


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def fetch(only: list[str] | None = None) -> list[tuple[Artifact, float]]:
    """Fetch the named artifacts (all by default); return each with the seconds it took."""
    results: list[tuple[Artifact, float]] = []
    for name in only or [n for n in FETCHERS if n not in LAB_ONLY]:
        started = time.monotonic()
        artifact = FETCHERS[name]()
        results.append((artifact, time.monotonic() - started))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.targets.native.artifacts", description=(__doc__ or "").split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser("fetch", help="fetch every artifact of the native target (or --only some)")
    fetch_cmd.add_argument("--only", action="append", choices=sorted(FETCHERS), help="fetch only this one (repeatable)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        results = fetch(args.only)
    except ArtifactError as error:
        console.print(f"[bold red]error:[/] {error}")
        return 1
    root = cache_root()
    table = Table(title=f"native artifacts (cache: {root})")
    for column in ("artifact", "requested", "obtained", "path", "size", "sha256", "seconds"):
        table.add_column(column, overflow="fold", no_wrap=column != "path")
    for artifact, seconds in results:
        path = artifact.path
        shown = f"<cache>/{path.relative_to(root)}" if path.is_relative_to(root) else str(path)
        table.add_row(
            artifact.name, artifact.requested, artifact.version, shown,
            _human(artifact.size_bytes), artifact.sha256[:12], f"{seconds:.1f}",
        )
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    for artifact, _ in results:
        for note in artifact.notes:
            console.print(f"[dim]{artifact.name}: {note}[/]")
    for major in (JAVA_FOR_JVM_SERVICES, JAVA_FOR_TRINO):
        with contextlib.suppress(ArtifactError):
            console.print(f"[dim]java >= {major}: {find_java(major)}[/]")
    console.print(f"[dim]total {time.monotonic() - started:.1f} s[/]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
