"""``make up|verify|down STACK=lab``: what a docker stack needs on this host before Pulumi runs (issue 19, item 2).

The engine a command talks to (``DOCKER_HOST``, else the project's own where it runs), which stacks are docker
stacks, and the provider plugin: present in the project's Pulumi home, or a message saying how to install a binary
where the plugin registry is not reachable (toolchain tier: the project's Pulumi CLI, a Pulumi home of its own).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi import automation as auto

from lakehouse_platform.control import docker_stack, services
from tests.support import REPO_ROOT


def test_commands_use_docker_host_else_the_projects_own_engine(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("LAKEHOUSE_STATE_DIR", str(tmp_path))
    assert services.point_at_engine({}) == "unix:///var/run/docker.sock"  # no engine of the project's: the default
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "docker.sock").touch()
    env: dict[str, str] = {}
    assert services.point_at_engine(env) == f"unix://{tmp_path}/docker/docker.sock"
    assert env == {"DOCKER_HOST": f"unix://{tmp_path}/docker/docker.sock", "DOCKER_BUILDKIT": "0"}
    mine = {"DOCKER_HOST": "tcp://127.0.0.1:2375"}
    assert services.point_at_engine(mine) == "tcp://127.0.0.1:2375" and mine == {"DOCKER_HOST": "tcp://127.0.0.1:2375"}


def test_only_the_lab_is_a_docker_stack():
    assert docker_stack.is_docker("lab")
    assert not docker_stack.is_docker("native") and not docker_stack.is_docker("cloud")
    assert not docker_stack.is_docker("no-such-stack")


@pytest.mark.toolchain
def test_a_missing_provider_plugin_says_how_to_install_a_binary(tmp_path: Path):
    from lakehouse_platform.control import toolchain
    from lakehouse_platform.control.workspace import ChosenCommand, pulumi_env

    tool = toolchain.current()
    if tool is None:
        pytest.skip("no Pulumi CLI: neither yours on PATH nor the project's build (make pulumi)")
    env = {**pulumi_env("lab", tool), "PULUMI_HOME": str(tmp_path / "home"),
           "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}"}
    workspace = auto.LocalWorkspace(work_dir=str(REPO_ROOT), env_vars=env, pulumi_command=ChosenCommand(tool))
    try:
        found = docker_stack.ensure_provider(workspace)
    except docker_stack.NotReady as exc:
        message = str(exc)
        version = docker_stack.provider_version()
        assert f"plugin install resource docker {version} --file" in message
        assert str(tmp_path / "home") in message and "installed: none" in message
        assert "pulumi-env.sh" not in message  # nothing to source: the engine-only path never builds the project's CLI
    else:  # the plugin registry is reachable from this host: it was installed
        assert found.endswith("installed from the plugin registry")


@pytest.mark.toolchain
def test_the_provider_hint_is_a_command_that_works_as_it_is_printed(tmp_path: Path):
    """The hint runs in a plain shell (no scripts/pulumi-env.sh, no PATH to a Pulumi CLI) and installs the binary
    into the Pulumi home the stack's workspace reads: here a stand-in executable for the provider."""
    import os
    import subprocess

    from lakehouse_platform.control import toolchain
    from lakehouse_platform.control.workspace import ChosenCommand, pulumi_env

    tool = toolchain.current()
    if tool is None:
        pytest.skip("no Pulumi CLI: neither yours on PATH nor the project's build (make pulumi)")
    home = tmp_path / "pulumi home"  # a space: the hint quotes what it names
    env = {**pulumi_env("lab", tool), "PULUMI_HOME": str(home)}
    workspace = auto.LocalWorkspace(work_dir=str(REPO_ROOT), env_vars=env, pulumi_command=ChosenCommand(tool))
    binary = tmp_path / "pulumi-resource-docker"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    hint = docker_stack.install_hint(workspace, "5.2.0")
    assert "pulumi-env.sh" not in hint and str(tool.pulumi) in hint  # the CLI by its path: nothing on PATH needed
    plain = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PULUMI_SKIP_UPDATE_CHECK": "true"}
    done = subprocess.run(["bash", "-c", hint.replace("<path to pulumi-resource-docker>", str(binary))], env=plain,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert (home / "plugins" / "resource-docker-v5.2.0" / "pulumi-resource-docker").exists(), os.listdir(home)
