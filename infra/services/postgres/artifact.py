"""PostgreSQL's native artifact: Debian's postgresql-N package (apt), its major from the pin."""

from __future__ import annotations

import re

from infra.artifacts import apt, cache
from infra.artifacts.artifact import Artifact, ArtifactError
from infra.services.context import ServiceContext
from infra.services.postgres.config import NAME, major_of
from infra.services.postgres.native import _installed


def artifact_key(ctx: ServiceContext) -> str:
    return f"postgres:{major_of(ctx)}"


def fetch_server(ctx: ServiceContext, oldest: int = 13) -> Artifact:
    """``/usr/lib/postgresql/<N>/bin`` for the newest N <= the pinned major that apt offers (or is installed).

    Debian 12 offers 15, so pin 18 yields 15 (said in ``notes``). Installed under a ``policy-rc.d``
    that forbids starting services; the cluster Debian creates on install is dropped (the platform
    runs its own ``initdb`` cluster).
    """
    wanted = major_of(ctx)
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
