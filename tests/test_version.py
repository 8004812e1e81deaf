"""The platform's version: one source (pyproject.toml), read everywhere, and a release record a test can follow."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from lakehouse_platform import version
from lakehouse_platform.services import operations_support
from tests.support.stacks import spec_of

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: The version as pyproject says it, read here without lakehouse_platform.version.
DECLARED = PYPROJECT["project"]["version"]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)


def test_the_version_is_pyprojects():
    assert version.PLATFORM_VERSION == version.platform_version() == DECLARED


def test_the_current_version_is_newer_than_the_previous_release_whose_commit_is_in_git():
    previous = version.previous_release()
    assert previous is not None, "[tool.lakehouse.releases] names no release older than this version"
    previous_version, commit = previous
    assert version.parse(previous_version) < version.parse(DECLARED)
    found = git("cat-file", "-t", commit)
    assert found.stdout.strip() == "commit", (
        f"the previous release {previous_version}'s commit {commit} is not in this clone ({found.stderr.strip()}); "
        "a shallow clone lacks it: git fetch --unshallow")
    assert git("merge-base", "--is-ancestor", commit, "HEAD").returncode == 0, (
        f"release {previous_version} ({commit}) is not an ancestor of HEAD")


def test_every_release_has_a_changelog_section_and_the_next_one_is_being_written():
    headings = re.findall(r"^## (.+)$", CHANGELOG, flags=re.MULTILINE)
    named = [re.match(r"\[([^\]]+)\]", h).group(1) for h in headings]  # type: ignore[union-attr]
    for released in version.releases():
        assert released in named, f"CHANGELOG.md has no '## [{released}]' section"
    # The newest section is this version: released ("## [0.4.0] - <date>") or being written ("## [Unreleased] 0.4.0").
    assert named[0] == DECLARED or (named[0] == "Unreleased" and DECLARED in headings[0]), headings[0]


def test_this_releases_notes_say_which_releases_it_upgrades_from_in_place():
    """From 0.5.0 on, each release's section carries its upgrade note, naming every release ``adopt`` supports."""
    from lakehouse_platform.control.adopt import SUPPORTED_RELEASES

    section = re.split(r"^## ", CHANGELOG, flags=re.MULTILINE)[1]
    note = re.search(rf"^### Upgrading to {re.escape(DECLARED)}\n(.+?)(?=^### |\Z)", section,
                     flags=re.MULTILINE | re.DOTALL)
    assert note, f"CHANGELOG.md's {DECLARED} section has no '### Upgrading to {DECLARED}' note"
    for release in SUPPORTED_RELEASES:
        assert release in note.group(1), f"the upgrade note does not say whether {release} upgrades in place"


def test_releases_are_read_oldest_first_and_refused_when_malformed(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "lakehouse-platform"\nversion = "1.2.0"\n[tool.lakehouse.releases]\n'
        f'"1.10.0" = "{"b" * 40}"\n"1.1.0" = "{"a" * 40}"\n"1.9.0" = "{"c" * 40}"\n')
    monkeypatch.setattr(version, "PYPROJECT", tmp_path / "pyproject.toml")
    version._pyproject.cache_clear()
    try:
        assert list(version.releases()) == ["1.1.0", "1.9.0", "1.10.0"]  # by number, not as text
        assert version.previous_release("1.2.0") == ("1.1.0", "a" * 40)
        assert version.previous_release("1.10.0") == ("1.9.0", "c" * 40)
        assert version.previous_release("1.0.0") is None  # the first release has no predecessor
        (tmp_path / "pyproject.toml").write_text('[project]\nname = "lakehouse-platform"\nversion = "1.2.0"\n[tool.lakehouse.releases]\n'
                                                 '"1.1.0" = "4b7f8d0"\n')
        version._pyproject.cache_clear()
        with pytest.raises(version.VersionError, match="the full 40-character commit"):
            version.releases()
    finally:
        version._pyproject.cache_clear()


@pytest.mark.parametrize("text", ["0.4", "v0.4.0", "0.4.0-rc1", "00.4.0", ""])
def test_a_version_that_is_not_major_minor_patch_is_refused(text):
    with pytest.raises(version.VersionError, match=r"MAJOR\.MINOR\.PATCH"):
        version.parse(text)


def test_every_target_exports_the_platform_version(lab_run, native_run, cloud_run):
    for run in (lab_run, native_run, cloud_run):
        assert run.outputs["platform_version"] == DECLARED


def test_the_operations_image_and_the_projects_own_services_carry_the_version():
    assert f"lakehouse/operations:{DECLARED}" == operations_support.OPERATIONS_IMAGE
    spec = spec_of("lab")
    for name in ("lakehouse-exporter", "catalog-gate"):
        assert spec.services[name].version == DECLARED
        assert spec.services[name].image == f"lakehouse/operations:{DECLARED}"
