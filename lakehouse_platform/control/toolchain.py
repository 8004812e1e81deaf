"""Which Pulumi CLI the project runs: the user's own where one fits, else the project's build.

A ``pulumi`` on ``PATH`` is the user's when its version is in the range the project supports
(``supported_range``: from the Python SDK pinned in ``pyproject.toml`` up to the next major) and it ships its
Python plugins beside it (the language host, its program launcher and the dynamic-provider launcher, as
Pulumi's own distribution does). Then the project runs it with its plugins and the user's ``PULUMI_HOME``;
otherwise it runs its own build (``.tools/bin``, ``scripts/install-pulumi.sh``), which is built only then. The
project's build exists only in a checkout of this repository (the script and its Go modules are not in the wheel): a
team's project runs its own Pulumi.

``LAKEHOUSE_PULUMI`` (``make ... PULUMI=...``) chooses:

- ``auto`` (default): the user's where it fits, else the project's build;
- ``project``: the project's build, even where the user has one (built by ``make pulumi``);
- ``installed``: the user's, or an error saying why the one found does not fit (CD uses it: never a Go build).

The choice is made here only; ``lakehouse_platform.control.workspace`` runs it and ``make pulumi`` reports it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lakehouse_platform.paths import PACKAGE_PARENT, project_root

MODE_ENV = "LAKEHOUSE_PULUMI"
MODES = ("auto", "project", "installed")
#: The build script of the checkout the package runs from (absent from an installed wheel), and where it installs.
INSTALL_SCRIPT = PACKAGE_PARENT / "scripts" / "install-pulumi.sh"
PROJECT_BIN = PACKAGE_PARENT / ".tools" / "bin"
PROJECT_HOME = PACKAGE_PARENT / ".tools" / "pulumi-home"
#: What a Pulumi installation ships beside its CLI that a Python program with dynamic providers needs.
PYTHON_PLUGINS = ("pulumi-language-python", "pulumi-language-python-exec", "pulumi-resource-pulumi-python")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(\S*)$")

#: MAJOR, MINOR, PATCH, and 1 for a release or 0 for a pre-release (which sorts below its release).
Version = tuple[int, int, int, int]


class ToolchainError(RuntimeError):
    """No Pulumi CLI the project can run, or a choice that cannot be honoured; the message says what to do."""


@dataclass(frozen=True)
class Toolchain:
    """The Pulumi CLI the project runs, and where its plugins come from."""

    kind: Literal["installed", "project"]
    pulumi: Path  # the CLI as found (on PATH, or .tools/bin/pulumi)
    version: str  # as the CLI reports it, without the leading v

    @property
    def bin_dir(self) -> Path:
        """Where the CLI and its plugins are: first on PATH, so the engine finds these plugins before any other."""
        return self.pulumi.resolve().parent

    @property
    def home(self) -> Path:
        """The Pulumi home the CLI reads (plugins, ``pulumi login``): the user's own, or the project's."""
        if self.kind == "project":
            return PROJECT_HOME
        return Path(os.environ.get("PULUMI_HOME") or Path.home() / ".pulumi").expanduser()

    def describe(self) -> str:
        """One line for ``make``: which CLI, where from, and why."""
        if self.kind == "installed":
            return (f"yours, {self.version} at {self.pulumi} (supported {supported_text()}), with its own "
                    f"{PYTHON_PLUGINS[0]}; plugins and login from {self.home}")
        return f"the project's build, {self.version} at {self.pulumi}"


def supported_range() -> tuple[Version, Version]:
    """[lowest, highest): from the Python SDK's version (an older engine may lack what that SDK asks of it) up to
    the next major (a new major may change what the project relies on)."""
    sdk = parse_version(importlib.metadata.version("pulumi"))
    assert sdk is not None, "the pulumi SDK's version is MAJOR.MINOR.PATCH"
    return (*sdk[:3], 1), (sdk[0] + 1, 0, 0, 0)  # the next major's pre-releases are outside too


def supported_text() -> str:
    low, high = supported_range()
    return f">={'.'.join(map(str, low[:3]))},<{'.'.join(map(str, high[:3]))}"


def parse_version(text: str) -> Version | None:
    """``v3.274.1`` -> ``(3, 274, 1, 1)``, ``3.275.0-alpha.1`` -> ``(3, 275, 0, 0)``; None for anything else."""
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    major, minor, patch = (int(g) for g in match.groups()[:3])
    return major, minor, patch, 0 if match.group(4).startswith("-") else 1


def cli_version(pulumi: Path) -> str:
    """What ``pulumi version`` prints (without the v); raises ToolchainError when the binary does not answer."""
    env = {**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"}
    try:
        done = subprocess.run([str(pulumi), "version"], capture_output=True, text=True, timeout=60, env=env,
                              check=False)
    except OSError as exc:
        raise ToolchainError(f"{pulumi} does not run: {exc}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{pulumi} version did not answer within 60 s") from None
    text = done.stdout.strip()
    if done.returncode != 0 or parse_version(text) is None:
        raise ToolchainError(f"{pulumi} version answered {text or done.stderr.strip()[:200]!r} (exit "
                             f"{done.returncode}), not a version")
    return text.removeprefix("v")


def _without_project_bin(path_env: str) -> str:
    """PATH minus the project's own .tools/bin (a shell that sourced pulumi-env.sh has it first)."""
    own = PROJECT_BIN.resolve()
    return os.pathsep.join(d for d in path_env.split(os.pathsep) if d and Path(d).resolve() != own)


def find_installed(path_env: str | None = None) -> tuple[Toolchain | None, str]:
    """The user's Pulumi on PATH if the project can run it, else None; and one line saying what was found."""
    found = shutil.which("pulumi", path=_without_project_bin(os.environ.get("PATH", "") if path_env is None
                                                              else path_env))
    if found is None:
        return None, "no pulumi on PATH"
    pulumi = Path(found)
    try:
        version = cli_version(pulumi)
    except ToolchainError as exc:
        return None, str(exc)
    low, high = supported_range()
    parsed = parse_version(version)
    assert parsed is not None
    if not low <= parsed < high:
        return None, (f"pulumi {version} at {pulumi} is outside the supported range {supported_text()} (the Python "
                      f"SDK pinned in pyproject.toml is {importlib.metadata.version('pulumi')})")
    beside = pulumi.resolve().parent
    missing = [name for name in PYTHON_PLUGINS if not os.access(beside / name, os.X_OK)]
    if missing:
        return None, f"pulumi {version} at {pulumi} has no {', '.join(missing)} beside it in {beside}"
    return Toolchain("installed", pulumi, version), f"pulumi {version} at {pulumi}"


def project_build() -> Toolchain | None:
    """The project's own build in .tools/bin, if ``make pulumi`` has installed it."""
    pulumi = PROJECT_BIN / "pulumi"
    if not os.access(pulumi, os.X_OK):
        return None
    return Toolchain("project", pulumi, cli_version(pulumi))


def mode(value: str | None = None) -> str:
    """``LAKEHOUSE_PULUMI``, checked: auto, project or installed."""
    chosen = (value if value is not None else os.environ.get(MODE_ENV, "")).strip() or "auto"
    if chosen not in MODES:
        raise ToolchainError(f"{MODE_ENV}={chosen!r} is not a choice; allowed: {', '.join(MODES)} (auto: yours where "
                             f"it fits, else the project's build; project: always the project's build; installed: "
                             "yours or an error)")
    return chosen


def wanted(choice: str | None = None, path_env: str | None = None) -> tuple[Literal["installed", "project"], str]:
    """Which kind of CLI the choice asks for here, and why; what ``make pulumi`` acts on (nothing is built)."""
    chosen = mode(choice)
    if chosen == "project":
        return "project", f"{MODE_ENV}=project"
    tool, why = find_installed(path_env)
    if tool is not None:
        return "installed", why
    if chosen == "installed":
        raise ToolchainError(f"{MODE_ENV}=installed, but {why}. Install Pulumi {supported_text()} "
                             "(https://www.pulumi.com/docs/install/) or unset it to use the project's build")
    return "project", why


@functools.cache
def _choose(choice: str, path_env: str) -> Toolchain:
    if choice == "project" and not INSTALL_SCRIPT.is_file():
        raise ToolchainError(f"{MODE_ENV}=project: the project's build exists only in a checkout of the repository; "
                             f"install Pulumi {supported_text()} (https://www.pulumi.com/docs/install/)")
    kind, why = wanted(choice, path_env)
    if kind == "installed":
        tool, _ = find_installed(path_env)
        assert tool is not None
        return tool
    built = project_build()
    if built is None:
        if not INSTALL_SCRIPT.is_file():
            raise ToolchainError(f"no Pulumi CLI to run: {why}. Install Pulumi {supported_text()} with its Python "
                                 "plugins (https://www.pulumi.com/docs/install/) and put it on PATH")
        hint = "make pulumi PULUMI=project" if choice == "project" else "make pulumi"
        raise ToolchainError(f"no Pulumi CLI to run: {why}, and the project's build ({PROJECT_BIN / 'pulumi'}) is not "
                             f"installed; run: {hint}")
    return built


def choose(choice: str | None = None, path_env: str | None = None) -> Toolchain:
    """The CLI to run (once per process for one choice and PATH); ToolchainError says what to do when none."""
    return _choose(mode(choice), os.environ.get("PATH", "") if path_env is None else path_env)


def current() -> Toolchain | None:
    """``choose()``, or None where there is no CLI at all (the unit tier: environments are still rendered)."""
    try:
        return choose()
    except ToolchainError:
        return None


def logged_in(home: Path) -> str | None:
    """The backend ``pulumi login`` chose in a Pulumi home (credentials.json's ``current``), if any."""
    try:
        current_backend = json.loads((home / "credentials.json").read_text(encoding="utf-8")).get("current")
    except (OSError, ValueError, AttributeError):
        return None
    return current_backend if isinstance(current_backend, str) and current_backend else None


def project_backend() -> str:
    """The Pulumi project's own local backend: ``file://<project>/.pulumi-state`` (the project being run)."""
    return f"file://{project_root() / '.pulumi-state'}"


def backend(tool: Toolchain | None, isolated: bool) -> tuple[str | None, str]:
    """The backend to set (None: leave the user's choice alone) and a line saying whose it is.

    The user's choice wins (``PULUMI_BACKEND_URL``, else ``pulumi login`` in the CLI's home); the project's local
    file backend is the default. Isolated stacks (tests, benchmarks) always stay in the project's backend: they
    are throwaway copies, never a team's.
    """
    if isolated:
        return project_backend(), "the project's (an isolated stack)"
    if os.environ.get("PULUMI_BACKEND_URL"):
        return None, f"yours: {os.environ['PULUMI_BACKEND_URL']} (PULUMI_BACKEND_URL)"
    home = tool.home if tool is not None else PROJECT_HOME
    chosen = logged_in(home)
    if chosen:
        return None, f"yours: {chosen} (pulumi login, {home / 'credentials.json'})"
    return project_backend(), f"the project's: {project_backend()}"


def ensure(say: Callable[[str], None] = print) -> Toolchain:
    """``make pulumi``: the CLI the choice asks for, ready; the project's build is built (or its cached build
    installed) only when that is the one. Says which CLI and which backend."""
    kind, why = wanted()
    if kind == "project":
        if not INSTALL_SCRIPT.is_file():
            raise ToolchainError(f"no Pulumi CLI fits ({why}): install Pulumi {supported_text()} with its Python "
                                 "plugins (https://www.pulumi.com/docs/install/) and put it on PATH")
        say(f"==> pulumi: the project's build ({why}); scripts/install-pulumi.sh")
        done = subprocess.run(["bash", str(INSTALL_SCRIPT)], check=False)
        if done.returncode != 0:
            raise ToolchainError(f"scripts/install-pulumi.sh failed (exit {done.returncode}); its output says why")
        _choose.cache_clear()
    tool = choose()
    say(f"==> pulumi: {tool.describe()}")
    say(f"==> backend: {backend(tool, isolated=False)[1]}")
    return tool
