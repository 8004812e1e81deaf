"""Which Pulumi CLI the project runs: the user's own on PATH when it fits, else the project's build.

Fake ``pulumi`` scripts that print a version stand for installed CLIs (too old, too new, without their Python
plugins); nothing here runs a real Pulumi CLI or builds one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lakehouse_platform.control import toolchain, workspace
from tests.support import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SDK_PIN = next(d.split("==")[1] for d in PYPROJECT["project"]["dependencies"] if d.startswith("pulumi=="))
SYSTEM_PATH = "/usr/bin:/bin"


def fake_pulumi(directory: Path, version: str, plugins: tuple[str, ...] = toolchain.PYTHON_PLUGINS,
                exit_code: int = 0) -> Path:
    """A ``pulumi`` that prints ``version`` for ``pulumi version``, with (some of) its Python plugins beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    pulumi = directory / "pulumi"
    pulumi.write_text(f"#!/bin/sh\necho '{version}'\nexit {exit_code}\n")
    for name in ("pulumi", *plugins):
        path = directory / name
        if not path.exists():
            path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
    return pulumi


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No project build unless a test makes one; a Pulumi home of the test's own; choices not carried over."""
    monkeypatch.setattr(toolchain, "PROJECT_BIN", tmp_path / "project" / ".tools" / "bin")
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "home"))
    for name in (toolchain.MODE_ENV, "PULUMI_BACKEND_URL"):
        monkeypatch.delenv(name, raising=False)
    toolchain._choose.cache_clear()
    yield
    toolchain._choose.cache_clear()


def test_the_supported_range_runs_from_the_sdk_pinned_in_pyproject_to_the_next_major():
    major = int(SDK_PIN.split(".")[0])
    assert toolchain.supported_text() == f">={SDK_PIN},<{major + 1}.0.0"


@pytest.mark.parametrize("version", [f"v{SDK_PIN}", "v3.274.1", "3.999.0"])
def test_an_installed_pulumi_in_range_with_its_plugins_is_used(tmp_path, version):
    user_bin = tmp_path / "opt" / "pulumi" / "bin"
    fake_pulumi(user_bin, version)
    path = f"{user_bin}:{SYSTEM_PATH}"
    tool = toolchain.choose(path_env=path)
    assert (tool.kind, tool.pulumi, tool.version) == ("installed", user_bin / "pulumi", version.removeprefix("v"))
    assert tool.describe().startswith(f"yours, {version.removeprefix('v')} at {user_bin / 'pulumi'}")
    env = workspace.pulumi_env("native", tool)
    assert env["PATH"].startswith(f"{user_bin}:")  # its own language host and launchers before any other
    # The user's Pulumi home (plugins, pulumi login) and plugin settings are left alone.
    assert "PULUMI_HOME" not in env and "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION" not in env


@pytest.mark.parametrize("version,why", [
    ("v3.200.0", "outside the supported range"),
    (f"v{SDK_PIN}-alpha.1", "outside the supported range"),  # a pre-release is below its release
    ("v4.0.0", "outside the supported range"),
    ("v4.0.0-rc.1", "outside the supported range"),
    ("pulumi version: unknown", "not a version"),
])
def test_an_installed_pulumi_out_of_range_is_not_used(tmp_path, version, why):
    user_bin = tmp_path / "user"
    fake_pulumi(user_bin, version)
    tool, found = toolchain.find_installed(f"{user_bin}:{SYSTEM_PATH}")
    assert tool is None and why in found
    if "range" in found:
        assert f"pulumi {version.removeprefix('v')} at {user_bin / 'pulumi'}" in found
        assert toolchain.supported_text() in found
    with pytest.raises(toolchain.ToolchainError, match=r"and the project's build .* is not installed; run: make pulumi"):
        toolchain.choose("auto", f"{user_bin}:{SYSTEM_PATH}")
    with pytest.raises(toolchain.ToolchainError, match=rf"LAKEHOUSE_PULUMI=installed, but .*{why}"):
        toolchain.choose("installed", f"{user_bin}:{SYSTEM_PATH}")


def test_an_installed_pulumi_that_fails_or_lacks_its_python_plugins_is_not_used(tmp_path):
    failing = fake_pulumi(tmp_path / "failing", "v3.274.1", exit_code=3)
    tool, found = toolchain.find_installed(f"{failing.parent}:{SYSTEM_PATH}")
    assert tool is None and "(exit 3), not a version" in found
    bare = fake_pulumi(tmp_path / "bare", "v3.274.1", plugins=("pulumi-language-python",))
    tool, found = toolchain.find_installed(f"{bare.parent}:{SYSTEM_PATH}")
    assert tool is None
    assert found.endswith(f"has no pulumi-language-python-exec, pulumi-resource-pulumi-python beside it in {bare.parent}")


def test_without_an_installed_pulumi_the_projects_build_is_used_and_without_either_make_pulumi_is_named(tmp_path):
    assert toolchain.find_installed(SYSTEM_PATH) == (None, "no pulumi on PATH")
    with pytest.raises(toolchain.ToolchainError, match=r"no pulumi on PATH, and the project's build .* run: make pulumi"):
        toolchain.choose(path_env=SYSTEM_PATH)
    assert toolchain.wanted(path_env=SYSTEM_PATH) == ("project", "no pulumi on PATH")  # make pulumi builds it
    fake_pulumi(toolchain.PROJECT_BIN, "v3.274.1")
    toolchain._choose.cache_clear()
    tool = toolchain.choose(path_env=SYSTEM_PATH)
    assert (tool.kind, tool.pulumi) == ("project", toolchain.PROJECT_BIN / "pulumi")
    env = workspace.pulumi_env("native", tool)
    assert env["PATH"].startswith(f"{toolchain.PROJECT_BIN}:")
    assert env["PULUMI_HOME"] == str(toolchain.PROJECT_HOME)
    assert env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"  # get.pulumi.com is not reachable here


def test_the_projects_own_bin_on_path_is_not_taken_for_the_users(tmp_path):
    fake_pulumi(toolchain.PROJECT_BIN, "v3.274.1")  # a shell that sourced scripts/pulumi-env.sh has it first
    assert toolchain.find_installed(f"{toolchain.PROJECT_BIN}:{SYSTEM_PATH}") == (None, "no pulumi on PATH")
    assert toolchain.choose(path_env=f"{toolchain.PROJECT_BIN}:{SYSTEM_PATH}").kind == "project"


def test_the_choice_project_or_installed_is_honoured_and_a_bad_one_names_the_allowed(tmp_path):
    user_bin = tmp_path / "user"
    fake_pulumi(user_bin, "v3.274.1")
    fake_pulumi(toolchain.PROJECT_BIN, "v3.274.1")
    path = f"{user_bin}:{SYSTEM_PATH}"
    assert toolchain.choose("project", path).kind == "project"
    assert toolchain.choose("installed", path).kind == "installed"
    assert toolchain.choose("", path).kind == "installed"  # empty: auto
    with pytest.raises(toolchain.ToolchainError, match="LAKEHOUSE_PULUMI='latest' is not a choice; allowed: auto, "
                                                       "project, installed"):
        toolchain.choose("latest", path)


def test_the_users_backend_is_respected_and_the_projects_file_backend_is_the_default(tmp_path, monkeypatch):
    user_bin = tmp_path / "user"
    tool = toolchain.Toolchain("installed", fake_pulumi(user_bin, "v3.274.1"), "3.274.1")
    backend = f"file://{REPO_ROOT / '.pulumi-state'}"  # the project being run: this repository (the tests' cwd)
    assert workspace.pulumi_env("native", tool)["PULUMI_BACKEND_URL"] == backend
    assert toolchain.backend(tool, isolated=False)[1] == f"the project's: {backend}"
    # A team's project (lakehouse -C DIR, or its working directory) has a backend of its own, never the package's.
    team = tmp_path / "team"
    team.mkdir()
    (team / "Pulumi.yaml").write_text("name: analytics\nruntime: python\n")
    monkeypatch.setenv("LAKEHOUSE_PROJECT", str(team))
    assert workspace.pulumi_env("dev", tool)["PULUMI_BACKEND_URL"] == f"file://{team / '.pulumi-state'}"
    assert workspace.pulumi_env("dev", tool)["LAKEHOUSE_PROJECT"] == str(team)
    monkeypatch.delenv("LAKEHOUSE_PROJECT")
    # pulumi login: credentials.json in the CLI's Pulumi home names the current backend.
    home = tmp_path / "home"
    home.mkdir()
    (home / "credentials.json").write_text(json.dumps({"current": "s3://team-state/lakehouse", "accounts": {}}))
    assert "PULUMI_BACKEND_URL" not in workspace.pulumi_env("native", tool)
    assert toolchain.backend(tool, isolated=False)[1].startswith("yours: s3://team-state/lakehouse (pulumi login")
    # PULUMI_BACKEND_URL wins over the login, and is inherited as the user set it.
    monkeypatch.setenv("PULUMI_BACKEND_URL", "https://api.pulumi.com")
    assert "PULUMI_BACKEND_URL" not in workspace.pulumi_env("cloud", tool)
    assert toolchain.backend(tool, isolated=False) == (None, "yours: https://api.pulumi.com (PULUMI_BACKEND_URL)")
    # Isolated stacks are the tests' and benchmarks' throwaway copies: always the project's local backend.
    assert workspace.pulumi_env("verify", tool)["PULUMI_BACKEND_URL"] == backend
    # The project's build reads its own home: a login there is respected the same way.
    project_tool = toolchain.Toolchain("project", fake_pulumi(toolchain.PROJECT_BIN, "v3.274.1"), "3.274.1")
    monkeypatch.delenv("PULUMI_BACKEND_URL")
    monkeypatch.setattr(toolchain, "PROJECT_HOME", home)
    assert "PULUMI_BACKEND_URL" not in workspace.pulumi_env("native", project_tool)


def test_make_pulumi_with_an_installed_pulumi_builds_nothing_and_says_so(tmp_path):
    """``lakehouse pulumi`` (what ``make pulumi`` runs) in its own process, PATH with a fake CLI."""
    user_bin = tmp_path / "user"
    fake_pulumi(user_bin, "v3.274.1")
    env = {**os.environ, "PATH": f"{user_bin}:{Path(sys.executable).parent}:{SYSTEM_PATH}",
           "PULUMI_HOME": str(tmp_path / "home")}
    env.pop(toolchain.MODE_ENV, None)
    env.pop("PULUMI_BACKEND_URL", None)
    done = subprocess.run([sys.executable, "-m", "lakehouse_platform", "pulumi"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"==> pulumi: yours, 3.274.1 at {user_bin / 'pulumi'} (supported {toolchain.supported_text()})" in done.stdout
    assert "install-pulumi.sh" not in done.stdout and "building" not in done.stdout  # no Go build, no install
    # Asked for an installed CLI where none fits: an error naming why, exit 1, nothing built.
    fake_pulumi(user_bin, "v4.1.0")
    done = subprocess.run([sys.executable, "-m", "lakehouse_platform", "pulumi"], cwd=REPO_ROOT,
                          env={**env, toolchain.MODE_ENV: "installed"}, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1
    assert "LAKEHOUSE_PULUMI=installed, but pulumi 4.1.0" in " ".join(done.stdout.split())
