"""Artifacts from PyPI (infra/artifacts/pypi.py): an sdist must match the sha256 the repository pins."""

from __future__ import annotations

import pytest

from infra.artifacts import pypi
from infra.artifacts.artifact import ArtifactError


def test_pypi_sdist_must_match_the_pinned_sha256(monkeypatch):
    pin = pypi.PinnedSdist("apache-flink-libraries", "2.1.3", "b" * 64)
    listed = [{"packagetype": "sdist", "url": "https://files/x.tar.gz", "filename": "x.tar.gz",
               "digests": {"sha256": "c" * 64}}]
    monkeypatch.setattr(pypi, "release_files", lambda project, version: listed)
    with pytest.raises(ArtifactError, match=r"PyPI publishes sha256 c+ but the repository pins b+"):
        pypi.sdist_file(pin)
    listed[0]["digests"]["sha256"] = "b" * 64
    assert pypi.sdist_file(pin)["url"] == "https://files/x.tar.gz"
    monkeypatch.setattr(pypi, "release_files", lambda project, version: [{"packagetype": "bdist_wheel"}])
    with pytest.raises(ArtifactError, match="no sdist"):
        pypi.sdist_file(pin)
