"""Files from Maven Central, verified against the repository's own checksums, with progress.

Every file fetched is checked against the published ``.sha512`` (or ``.sha1``) before it is kept;
its sha256 is then recorded in the cache manifest (``maven:<group>:<artifact>:<version>:<classifier>:<ext>``).
Jar lists (``JarLock``) pin a whole directory of jars by sha256, for runtimes Maven does not ship
as one artifact (Kafka's classpath, Connect plugins).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import requests
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from lakehouse_platform.artifacts import cache
from lakehouse_platform.artifacts.artifact import ArtifactError

MAVEN_REPO = os.environ.get("LAKEHOUSE_MAVEN_REPO", "https://repo1.maven.org/maven2").rstrip("/")
HTTP_TIMEOUT = (15, 120)  # connect, read (seconds)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold blue]{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        TimeRemainingColumn(), console=cache.console, transient=False,
    )


def download(url: str, dest: Path, expected: tuple[str, str]) -> str:
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
            for chunk in response.iter_content(cache.CHUNK):
                out.write(chunk)
                check.update(chunk)
                sha256.update(chunk)
                progress.advance(task, len(chunk))
    if check.hexdigest() != want.lower():
        partial.unlink(missing_ok=True)
        raise ArtifactError(f"{url}: {algorithm} {check.hexdigest()} but the source publishes {want}")
    os.replace(partial, dest)
    return sha256.hexdigest()


@dataclass(frozen=True)
class Coordinate:
    """One Maven file: group, artifact, version, optional classifier, extension."""

    group: str
    artifact: str
    version: str
    classifier: str | None = None
    ext: str = "jar"

    @property
    def url(self) -> str:
        suffix = f"-{self.classifier}" if self.classifier else ""
        return (f"{MAVEN_REPO}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/"
                f"{self.artifact}-{self.version}{suffix}.{self.ext}")

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[1]

    @property
    def key(self) -> str:
        return f"maven:{self.group}:{self.artifact}:{self.version}:{self.classifier or ''}:{self.ext}"

    @property
    def cache_path(self) -> Path:
        """Where the file lives in the cache (``maven/<group path>/<artifact>/<version>/``)."""
        return (cache.cache_root(create=False) / "maven" / self.group.replace(".", "/") / self.artifact
                / self.version / self.filename)


def published_checksum(url: str) -> tuple[str, str]:
    """The repository's own checksum of ``url``: ``.sha512`` when published, else ``.sha1``."""
    for algorithm in ("sha512", "sha1"):
        response = requests.get(f"{url}.{algorithm}", timeout=HTTP_TIMEOUT)
        if response.status_code == 200 and response.text.strip():
            return algorithm, response.text.split()[0]
    raise ArtifactError(f"{url}: neither .sha512 nor .sha1 is published, refusing an unverified download")


def exists(coordinate: Coordinate) -> bool:
    return requests.head(coordinate.url, timeout=HTTP_TIMEOUT, allow_redirects=True).status_code == 200


def latest(group: str, artifact: str) -> str:
    """The ``<release>`` (else ``<latest>``) version in the artifact's maven-metadata.xml."""
    url = f"{MAVEN_REPO}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    response = requests.get(url, timeout=HTTP_TIMEOUT)
    match = re.search(r"<release>([^<]+)</release>", response.text) or re.search(r"<latest>([^<]+)</latest>",
                                                                                  response.text)
    if response.status_code != 200 or not match:
        raise ArtifactError(f"{url} answered {response.status_code} with no release version")
    return match.group(1)


def fetch(coordinate: Coordinate, sha256: str | None = None) -> Path:
    """One Maven Central file in the cache, verified (and checked against ``sha256`` when pinned)."""
    dest = coordinate.cache_path
    with cache.locked(coordinate.key):
        entry = cache.load_manifest().get(coordinate.key)
        if cache.verified(entry) and (sha256 is None or (entry is not None and entry["sha256"] == sha256)):
            return dest
        got = download(coordinate.url, dest, published_checksum(coordinate.url))
        if sha256 is not None and got != sha256:
            dest.unlink(missing_ok=True)
            raise ArtifactError(f"{coordinate.url}: sha256 {got} but the lock pins {sha256}")
        cache.record(coordinate.key, {
            "name": coordinate.artifact, "requested": coordinate.version, "version": coordinate.version,
            "path": str(dest), "root": str(dest.parent), "files": {dest.name: {"sha256": got,
                                                                             "size": dest.stat().st_size}},
            "sha256": got, "source": coordinate.url,
        })
    return dest


@dataclass(frozen=True)
class LockedJar:
    """One jar of a jar lock: its coordinate and the sha256 the lock pins."""

    coordinate: Coordinate
    sha256: str


@dataclass(frozen=True)
class JarLock:
    """A directory of jars pinned by sha256 (a JSON file beside the service that needs it)."""

    name: str
    jars: tuple[LockedJar, ...]

    @classmethod
    def read(cls, path: Path) -> JarLock:
        document = json.loads(path.read_text())
        jars = tuple(
            LockedJar(Coordinate(j["group"], j["artifact"], j["version"], j.get("classifier"), j.get("ext", "jar")),
                      j["sha256"])
            for j in document["jars"]
        )
        return cls(document["name"], jars)

    def digest(self) -> str:
        """One sha256 over the lock's pins: the cache key of the assembled directory."""
        jars = sorted(self.jars, key=lambda j: j.coordinate.filename)
        lines = "".join(f"{j.coordinate.filename} {j.sha256}\n" for j in jars)
        return hashlib.sha256(lines.encode()).hexdigest()


def fetch_all(jars: Sequence[LockedJar]) -> list[Path]:
    """Every jar of a lock in the cache, each verified against its pin."""
    return [fetch(j.coordinate, j.sha256) for j in jars]


def link_into(files: Sequence[Path], dest: Path) -> list[Path]:
    """Hard links of cached files in ``dest`` (a copy across file systems), so the directory holds real files.

    Real files, not symlinks: a container that mounts ``dest`` does not see the cache the links point into.
    A directory is rebuilt from scratch so no jar of an older lock lingers in it.
    """
    import shutil

    staging = dest.with_name(dest.name + f".tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for path in files:
        target = staging / path.name
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(staging, dest)
    return [dest / p.name for p in files]
