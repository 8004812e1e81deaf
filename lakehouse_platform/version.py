"""The platform's version, in one place, and the releases before it.

The version is ``pyproject.toml``'s ``[project].version`` and nothing else: the stack output
``platform_version``, the review's header and the operations image's tag read it from here. The releases
are ``[tool.lakehouse.releases]`` in the same file (version -> the commit its ``v<version>`` tag points at),
so "the previous release" is data a test and the upgrade test can read; ``CHANGELOG.md`` says what each
release holds.

Read once, on the host, when the program or a command starts (never inside a dynamic provider or the
operations image: they receive the value). Installed from a wheel there is no ``pyproject.toml`` beside the
package: the version is the installed distribution's (its metadata, written from the same field), and there is
no release record (only this repository's tests and tooling read it).
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import tomllib
from typing import Any

from lakehouse_platform.paths import PACKAGE_PARENT

DISTRIBUTION = "lakehouse-platform"
#: This repository's pyproject.toml, when the package runs from a checkout of it (an editable install).
PYPROJECT = PACKAGE_PARENT / "pyproject.toml"
#: A release version: MAJOR.MINOR.PATCH, numbers only (the project's own versions; no pre-releases).
RELEASE_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")


class VersionError(ValueError):
    """The project's version or its release record is not what this module can read."""


@functools.cache
def _pyproject() -> dict[str, Any]:
    """The checkout's pyproject.toml, or nothing where the package is installed (or the file is another's)."""
    if not PYPROJECT.is_file():
        return {}
    document = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return document if document.get("project", {}).get("name") == DISTRIBUTION else {}


def parse(version: str) -> tuple[int, int, int]:
    """``0.4.0`` -> ``(0, 4, 0)``; anything else is refused."""
    match = RELEASE_VERSION.match(version)
    if match is None:
        raise VersionError(f"{version!r} is not a release version: MAJOR.MINOR.PATCH, numbers only (e.g. 0.4.0)")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


@functools.cache
def platform_version() -> str:
    """The platform's version: the checkout's pyproject ``[project].version``, else the installed metadata's."""
    version = _pyproject().get("project", {}).get("version") or importlib.metadata.version(DISTRIBUTION)
    parse(version)
    return str(version)


def releases() -> dict[str, str]:
    """Every release so far, oldest first: version -> commit (``[tool.lakehouse.releases]``)."""
    table = _pyproject().get("tool", {}).get("lakehouse", {}).get("releases", {})
    for version, commit in table.items():
        parse(version)
        if not isinstance(commit, str) or not COMMIT.match(commit):
            raise VersionError(f"[tool.lakehouse.releases] {version!r} = {commit!r}: a release names the full "
                               "40-character commit its tag points at")
    return dict(sorted(table.items(), key=lambda item: parse(item[0])))


def previous_release(version: str | None = None) -> tuple[str, str] | None:
    """The newest release older than ``version`` (this checkout's by default): (version, commit), or None."""
    current = parse(version or platform_version())
    older = [(v, c) for v, c in releases().items() if parse(v) < current]
    return older[-1] if older else None


#: This checkout's version, read once (a constant, so nothing that runs later reads a file for it).
PLATFORM_VERSION = platform_version()
