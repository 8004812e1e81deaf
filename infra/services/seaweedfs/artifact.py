"""SeaweedFS's native artifact: ``weed`` built from the Go module proxy at the pinned version."""

from __future__ import annotations

import re

from infra.artifacts import cache, gobuild
from infra.artifacts.artifact import Artifact, ArtifactError
from infra.services.context import ServiceContext
from infra.services.seaweedfs.config import NAME

MODULE = "github.com/seaweedfs/seaweedfs"


#: SeaweedFS release -> Go module version the proxy serves. The proxy has no tag for SeaweedFS
#: releases; this pseudo-version is the one that resolves. Its source says 4.53, not 4.45
#: (weed/util/version/constants.go); the artifact's version is what ``weed version`` prints.
MODULE_VERSIONS = {"4.45": "v0.0.0-20261109003541-7506e5f91cd6"}


def artifact_key(ctx: ServiceContext) -> str:
    return f"seaweedfs:{ctx.service.version}"


def fetch_weed(ctx: ServiceContext) -> Artifact:
    """``weed`` built for the SeaweedFS release the spec pins (cold: minutes on 2 cores)."""
    version = ctx.service.version
    key = artifact_key(ctx)

    def build() -> cache.Entry:
        if version not in MODULE_VERSIONS:
            raise ArtifactError(f"no Go module version known for SeaweedFS {version}; add it to "
                                f"seaweedfs.MODULE_VERSIONS (known: {', '.join(MODULE_VERSIONS)})")
        module_version = MODULE_VERSIONS[version]
        out_dir = cache.cache_root() / "seaweedfs" / version
        binary = out_dir / "weed"
        commit = module_version.rsplit("-", 1)[-1]
        seconds = gobuild.build_from_module(MODULE, module_version, "./weed", binary,
                                            ldflags=f"-s -w -X {MODULE}/weed/util/version.COMMIT={commit}")
        printed = cache.run([str(binary), "version"]).strip()
        match = re.search(r"\b(\d+\.\d+)\b", printed)
        obtained = match.group(1) if match else printed
        notes = [f"weed version: {printed}", f"go module {MODULE}@{module_version}"]
        if obtained != version:
            notes.append(f"pin {version} resolves to source version {obtained}")
        return {
            "name": NAME, "requested": version, "version": obtained, "path": str(binary), "root": str(out_dir),
            "files": {"weed": cache.file_record(binary)}, "sha256": cache.sha256_file(binary),
            "source": f"{MODULE}@{module_version}", "build_seconds": seconds, "notes": notes,
        }

    return cache.obtain(key, build)
