"""PostgreSQL's native artifact, from Debian's packages (apt).

The pin's exact version when apt offers it (``apt-cache madison postgresql-N``: a Debian release carries its main
archive's minor and the security archive's newer one side by side): ``postgresql-N`` and ``postgresql-client-N`` of
that version downloaded (apt checks them against its signed index) and unpacked side by side, never installed, so a
minor version bump is a new directory of binaries and the next ``pulumi up`` restarts the server on it, in place
(docs/operations/upgrades.md#postgresql). Otherwise the newest major up to the pin that apt offers or has installed,
installed by apt (Debian 12 offers 15, so pin 18 yields 15, said in ``notes``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from lakehouse_platform.artifacts import apt, cache
from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.postgres.config import NAME, major_of
from lakehouse_platform.services.postgres.native import _installed

#: Where an exact version is unpacked when the platform runs as root: the server then runs as the package's system
#: user, which must reach its binaries, and the cache under /root is closed to it (like apt's /usr/lib/postgresql).
SYSTEM_UNPACK_ROOT = Path("/var/cache/lakehouse-platform/postgresql")


def artifact_key(ctx: ServiceContext) -> str:
    return f"postgres:{ctx.service.version}"


def fetch_server(ctx: ServiceContext, oldest: int = 13) -> Artifact:
    """The server's ``bin`` directory for the pin: its exact version when apt offers it, else the newest major."""
    wanted = major_of(ctx)
    package = f"postgresql-{wanted}"
    apt.refresh_if_unknown([package])
    exact = [v for v in apt.offered_versions(package) if apt.upstream_of(v) == ctx.service.version]
    if exact:
        return _unpacked(ctx, wanted, exact[0])
    return _newest_major(ctx, wanted, oldest)


def unpack_root(version: str) -> Path:
    """Where the exact ``version`` is unpacked: under the cache, or ``SYSTEM_UNPACK_ROOT`` for root."""
    base = SYSTEM_UNPACK_ROOT if os.geteuid() == 0 else cache.cache_root() / NAME
    return base / version


def _unpacked(ctx: ServiceContext, major: int, debian_version: str) -> Artifact:
    """``postgresql-N`` and ``postgresql-client-N`` of ``debian_version`` unpacked (server, initdb, psql, pg_dump,
    pg_isready); PostgreSQL finds its share and lib directories relative to its binaries, so they run from there."""
    version = ctx.service.version

    def build() -> cache.Entry:
        debs = apt.download([f"postgresql-{major}={debian_version}", f"postgresql-client-{major}={debian_version}"],
                            cache.cache_root() / NAME / "debs")
        root = unpack_root(version)
        if root.is_relative_to(SYSTEM_UNPACK_ROOT):
            for directory in (SYSTEM_UNPACK_ROOT.parent, SYSTEM_UNPACK_ROOT):
                directory.mkdir(exist_ok=True)
                directory.chmod(0o755)  # the server's own user walks down to its binaries
        staging = root.with_name(f".{root.name}.{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        staging.chmod(0o755)
        apt.unpack(debs, staging)
        shutil.rmtree(root, ignore_errors=True)
        os.replace(staging, root)
        bindir = root / "usr" / "lib" / "postgresql" / str(major) / "bin"
        printed = cache.run([str(bindir / "postgres"), "--version"]).strip()
        if f") {version}" not in printed:
            raise ArtifactError(f"postgresql-{major}={debian_version} prints {printed!r}, not PostgreSQL {version}")
        files = cache.tree_files(root)
        return {
            "name": NAME, "requested": version, "version": version, "path": str(bindir), "root": str(root),
            "files": files, "sha256": cache.tree_digest(files),
            "source": f"apt postgresql-{major}={debian_version}, postgresql-client-{major}={debian_version}",
            "notes": [printed, f"unpacked (dpkg-deb -x) into {root}, not installed: {', '.join(d.name for d in debs)}"],
        }

    return cache.obtain(artifact_key(ctx), build)


def _newest_major(ctx: ServiceContext, wanted: int, oldest: int) -> Artifact:
    """``/usr/lib/postgresql/<N>/bin`` for the newest N <= the pinned major that apt offers (or is installed).

    Installed under a ``policy-rc.d`` that forbids starting services; the cluster Debian creates on install is
    dropped (the platform runs its own ``initdb`` cluster).
    """
    key = artifact_key(ctx)
    with cache.locked(NAME):
        installed = _installed()
        chosen = wanted if wanted in installed else None
        if chosen is None:
            packages = [f"postgresql-{m}" for m in range(wanted, oldest - 1, -1)]
            offered = {int(p.split("-")[1]) for p in apt.refresh_if_unknown(packages)}
            best_offered = max(offered, default=None)
            best_installed = max((m for m in installed if m <= wanted), default=None)
            if best_installed is not None and (best_offered is None or best_installed >= best_offered):
                chosen = best_installed
            elif best_offered is not None:
                apt.install([f"postgresql-{best_offered}"])
                _drop_debian_cluster(best_offered)
                chosen = best_offered
            else:
                raise ArtifactError(f"apt offers no postgresql-N package with N <= {wanted}")
        bindir = _installed()[chosen]
        printed = cache.run([str(bindir / "postgres"), "--version"]).strip()
        match = re.search(r"\)\s*(\d+(?:\.\d+)*)", printed)
        notes = [printed]
        if chosen != wanted:
            notes.append(f"pin {wanted} not offered by apt; using {chosen}, the newest it offers")
        else:
            notes.append(f"pin {ctx.service.version}: apt offers no such exact version; using its {chosen}")
        entry: cache.Entry = {
            "name": NAME, "requested": str(wanted), "version": match.group(1) if match else printed,
            "path": str(bindir), "root": str(bindir),
            "files": {},  # apt owns these files: recorded, not re-verified (an apt upgrade may change them)
            "size": sum(p.stat().st_size for p in bindir.iterdir() if p.is_file()),
            "sha256": cache.sha256_file(bindir / "postgres"), "source": f"apt postgresql-{chosen}", "notes": notes,
        }
        if cache.load_manifest().get(key) != entry:
            cache.record(key, entry)
        return cache.artifact_from(entry)


def _drop_debian_cluster(major: int) -> None:
    clusters = cache.run(["pg_lsclusters", "--no-header"])
    for line in clusters.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == str(major) and parts[1] == "main":
            cache.run(["pg_dropcluster", "--stop", str(major), "main"])
