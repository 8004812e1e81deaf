"""Trino's native artifact: the trino-server tarball from Maven Central, unpacked with only the plugins it needs."""

from __future__ import annotations

import shutil
from pathlib import Path

from lakehouse_platform.artifacts import archive, cache, maven
from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.trino.config import NAME

#: Trino plugins kept after unpacking natively; the server starts with only these (the file password
#: authenticator is its own plugin; its jars are hard links into lib/, which is kept whole).
PLUGINS = ("iceberg", "password-authenticators")


def native_version(ctx: ServiceContext) -> str:
    return ctx.service.native_version or ctx.service.version


def artifact_key(ctx: ServiceContext) -> str:
    return f"trino:{native_version(ctx)}:{','.join(sorted(PLUGINS))}"


def fetch_server(ctx: ServiceContext) -> Artifact:
    """Trino server unpacked into the cache with only ``PLUGINS`` kept; ``path`` is its home.

    The tarball (~820 MB) is verified against its published checksum, unpacked, and deleted.
    """
    version = native_version(ctx)
    key = artifact_key(ctx)

    def build() -> cache.Entry:
        coordinate = maven.Coordinate("io.trino", "trino-server", version, None, "tar.gz")
        tarball = maven.fetch(coordinate)
        tar_sha256 = cache.load_manifest()[coordinate.key]["sha256"]
        home = cache.cache_root() / NAME / f"trino-server-{version}"
        cache.console.print(f"[bold]trino[/]: unpacking {tarball.name} (plugins kept: {', '.join(PLUGINS)})")

        def prune(unpacked: Path) -> None:
            for plugin in (unpacked / "plugin").iterdir():
                if plugin.name not in PLUGINS:
                    shutil.rmtree(plugin)

        archive.unpack_tarball(tarball, home, f"trino-server-{version}", prune)
        tarball.unlink()  # ~820 MB; its sha256 stays in the manifest
        files = cache.tree_files(home)
        return {
            "name": NAME, "requested": version, "version": version, "path": str(home), "root": str(home),
            "files": files, "sha256": cache.tree_digest(files), "source": coordinate.url,
            "tarball_sha256": tar_sha256, "notes": [f"plugins kept: {', '.join(PLUGINS)}"],
        }

    return cache.obtain(key, build)
