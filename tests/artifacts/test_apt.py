"""Debian packages as artifacts: versions read the way apt writes them, downloads matched to what was asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse_platform.artifacts import apt
from lakehouse_platform.artifacts.artifact import ArtifactError


@pytest.mark.parametrize(("debian", "upstream"), [("15.20-0+deb12u1", "15.20"), ("1:15.18-0+deb12u1", "15.18"),
                                                  ("18.1-1.pgdg120+2", "18.1")])
def test_the_upstream_version_of_a_debian_version(debian: str, upstream: str) -> None:
    assert apt.upstream_of(debian) == upstream


def test_a_download_returns_exactly_the_files_of_the_versions_asked_for(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An older download of the same package in the directory is not taken for the new one."""
    for name in ("postgresql-15_15.18-0+deb12u1_amd64.deb", "postgresql-15_15.20-0+deb12u1_amd64.deb",
                 "postgresql-client-15_15.20-0+deb12u1_amd64.deb", "libpq5_1%3a15.20-1_amd64.deb"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr(apt.cache, "run", lambda argv, **_: "")
    found = apt.download(["postgresql-15=15.20-0+deb12u1", "postgresql-client-15=15.20-0+deb12u1",
                          "libpq5=1:15.20-1"], tmp_path)
    assert [p.name for p in found] == ["postgresql-15_15.20-0+deb12u1_amd64.deb",
                                       "postgresql-client-15_15.20-0+deb12u1_amd64.deb", "libpq5_1%3a15.20-1_amd64.deb"]
    with pytest.raises(ArtifactError, match=r"apt-get download postgresql-15=15.19-0\+deb12u1: expected one file"):
        apt.download(["postgresql-15=15.19-0+deb12u1"], tmp_path)
