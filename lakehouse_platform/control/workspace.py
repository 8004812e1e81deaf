"""The project's Pulumi stacks through the Automation API: one workspace, the chosen CLI, its environment.

The CLI is the user's own where one fits, else the project's build (``lakehouse_platform.control.toolchain`` decides).
Its environment is defined here and nowhere else (``scripts/pulumi-env.sh`` prints it from this module): the
chosen CLI's directory first on PATH (so the engine finds its plugins), no update checks, the documented lab
passphrase unless one is set, and the backend the user chose (``PULUMI_BACKEND_URL`` or ``pulumi login``), else
the project's local file backend. With the project's build also its own Pulumi home and no plugin downloads
(get.pulumi.com is not reachable here); with the user's, their home and their plugin settings. The project is the
Pulumi project being run (``paths.project_root``: a team's repository or this one), and the Python that runs a
policy pack (which names no virtualenv) is this one.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from pulumi import automation as auto
from semver import VersionInfo

from lakehouse_platform.config import ConfigError, load_stack
from lakehouse_platform.control import toolchain
from lakehouse_platform.control.isolated import STACKS as ISOLATED_STACKS
from lakehouse_platform.model import Target
from lakehouse_platform.paths import PROJECT_ENV, project_root

LAB_PASSPHRASE = "lakehouse-native-lab"  # noqa: S105 - the documented lab passphrase (README)
# Provider packages installed in the venv that a native stack never uses and that no registry here
# can supply: the language host must not make the engine ask for them (tools/pulumi-language-python/plugins.go).
NATIVE_SKIP_PLUGINS = "aws,docker"
DOCKER_SKIP_PLUGINS = "aws"


def pulumi_env(stack: str | None = None, tool: toolchain.Toolchain | None = None) -> dict[str, str]:
    """The environment every Pulumi command of this project runs with (``tool``: the chosen CLI by default; where
    there is none, the project's build's layout, so the environment can still be shown)."""
    tool = tool or toolchain.current()
    project = tool is None or tool.kind == "project"
    env = {
        "PATH": f"{tool.bin_dir if tool else toolchain.PROJECT_BIN}:{os.environ.get('PATH', '')}",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",  # the range is checked by control.toolchain
        # The native target's dynamic provider forks service processes from a process running gRPC
        # threads; gRPC's fork handlers then crash the child before exec (SIGSEGV in event_engine).
        "GRPC_ENABLE_FORK_SUPPORT": "false",
        # The policy pack shipped in the package names no virtualenv (it lives inside one, or in a checkout): the
        # engine runs it with this interpreter, where the package is installed.
        "PULUMI_PYTHON_CMD": os.environ.get("PULUMI_PYTHON_CMD") or sys.executable,
        # The project whose stack files a policy pack reads (``lakehouse:extends``): it runs in its own directory.
        PROJECT_ENV: str(project_root()),
    }
    if project:
        env["PULUMI_HOME"] = str(toolchain.PROJECT_HOME)
        env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
    backend, _ = toolchain.backend(tool, isolated=stack in ISOLATED_STACKS)
    if backend is not None:
        env["PULUMI_BACKEND_URL"] = backend
    if "PULUMI_CONFIG_PASSPHRASE" not in os.environ and not os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE"):
        env["PULUMI_CONFIG_PASSPHRASE"] = LAB_PASSPHRASE
    skip = _skip_plugins(stack) if stack is not None else None
    if skip is not None:
        env.setdefault("PULUMI_PYTHON_SKIP_PLUGINS", os.environ.get("PULUMI_PYTHON_SKIP_PLUGINS", skip))
    return env


def describe(stack: str | None = None) -> str:
    """What ``make`` says about the CLI and the backend a stack's commands use."""
    tool = toolchain.choose()
    _, whose = toolchain.backend(tool, isolated=stack in ISOLATED_STACKS)
    return f"pulumi: {tool.describe()}; backend: {whose}"


class ChosenCommand(auto.PulumiCommand):
    """The chosen CLI for the Automation API, by its path (its version already read and checked by the toolchain).

    ``PulumiCommand(root=...)`` wants ``<root>/bin/pulumi`` and runs ``pulumi version`` again; a user's CLI may
    live anywhere on PATH.
    """

    def __init__(self, tool: toolchain.Toolchain):
        self.command = str(tool.pulumi)
        self.version = VersionInfo.parse(tool.version)


def _skip_plugins(stack: str) -> str | None:
    """The provider packages the stack's target never uses (native: aws and docker; the lab: aws)."""
    try:
        target = load_stack(stack).target
    except ConfigError:
        return None  # Pulumi itself reports the stack's problem
    return {Target.NATIVE: NATIVE_SKIP_PLUGINS, Target.DOCKER: DOCKER_SKIP_PLUGINS}.get(target)


class StackCommandFailed(RuntimeError):
    """A Pulumi command failed; the message carries the end of its output."""


def make_backend_dir(env: dict[str, str]) -> None:
    """A file backend's directory (the project's, or one ``PULUMI_BACKEND_URL`` names), made where it is missing:
    Pulumi refuses to open a missing one, and a fresh clone has none. One that cannot be made is said in one line."""
    url = env.get("PULUMI_BACKEND_URL") or os.environ.get("PULUMI_BACKEND_URL", "")
    if url.startswith("file://"):
        try:
            Path(os.path.expanduser(url.removeprefix("file://"))).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StackCommandFailed(f"the Pulumi backend {url} cannot be used: {exc.strerror or exc}; point "
                                     "PULUMI_BACKEND_URL at a directory (or unset it for the project's)") from None


def init_project_stacks(env: dict[str, str]) -> list[str]:
    """On the project's own file backend, each stack of a stack file of the project on docker or native that the
    backend lacks, created (``pulumi stack init``, passphrase secrets): so a plain ``pulumi preview --stack <s>``
    works as a first command. The stacks made."""
    if env.get("PULUMI_BACKEND_URL") != toolchain.project_backend():
        return []  # a backend of the user's choosing: its stacks are theirs to make
    wanted = []
    for path in sorted(project_root().glob("Pulumi.*.yaml")):
        name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        try:
            if load_stack(name).target is not Target.AWS and name not in ISOLATED_STACKS:
                wanted.append(name)
        except ConfigError:
            continue
    ws = workspace()
    have = {summary.name for summary in ws.list_stacks()}
    made = [name for name in wanted if name not in have]
    for name in made:
        ws.create_stack(name)
    return made


def workspace(stack: str | None = None) -> auto.LocalWorkspace:
    """The project's workspace: the chosen CLI (ToolchainError when there is none), its environment."""
    tool = toolchain.choose()
    env = pulumi_env(stack, tool)
    make_backend_dir(env)
    if "PULUMI_HOME" in env:
        Path(env["PULUMI_HOME"]).mkdir(parents=True, exist_ok=True)
    return auto.LocalWorkspace(work_dir=str(project_root()), pulumi_command=ChosenCommand(tool), env_vars=env,
                               secrets_provider="passphrase")


def select(stack: str) -> auto.Stack:
    """The stack, created on first use (passphrase secrets); a backend that refuses says so in one line."""
    try:
        return auto.Stack.create_or_select(stack, workspace(stack))
    except auto.CommandError as exc:
        said = [line for line in str(exc).splitlines() if "error:" in line.lower()]
        raise StackCommandFailed(f"pulumi could not select or create stack {stack}: "
                                 f"{said[-1].strip() if said else str(exc)[-500:]}") from None


def outputs(stack: str) -> dict[str, Any]:
    """The stack's outputs as plain values, secrets shown (for clients on this host)."""
    return {key: value.value for key, value in select(stack).outputs().items()}


def forget(stack: str) -> None:
    """Remove a stack from the backend (after destroy); missing is fine."""
    ws = workspace(stack)
    if any(summary.name == stack for summary in ws.list_stacks()):
        ws.remove_stack(stack, force=True)


#: What may run a recorded provider's own code (``read``, ``delete``): its resources are adopted first.
RUNS_RECORDED_PROVIDERS = ("up", "destroy", "refresh")


def run(stack: str, what: str, quiet: bool, **kwargs: Any) -> float:
    """Run ``up``/``destroy``/``refresh``/``preview`` on a stack; seconds taken. Progress is shown as it goes: Pulumi's
    own lines, or (``quiet``) the line it is at beside a spinner.

    Before ``up``, ``destroy`` and ``refresh``, resources an earlier release recorded are taken over by this
    release's providers (``adopt``): an upgrade in place has removed the files some of them ran."""
    from lakehouse_platform.control.adopt import adopt
    from lakehouse_platform.control.progress import step

    handle = select(stack)
    started = time.perf_counter()
    if what in RUNS_RECORDED_PROVIDERS:
        adopt(handle, say=(lambda _line: None) if quiet else print)
    with step(f"pulumi {what} --stack {stack}") as detail:
        def on_output(line: str) -> None:
            if quiet:
                detail(line.strip()[:100])
            else:
                print(line, flush=True)

        try:
            getattr(handle, what)(on_output=on_output, color="never", **kwargs)
        except auto.CommandError as exc:
            raise StackCommandFailed(f"pulumi {what} --stack {stack} failed:\n{diagnostics(str(exc))}") from None
    return time.perf_counter() - started


def diagnostics(output: str, limit: int = 6000) -> str:
    """What a failed Pulumi command said went wrong: its ``Diagnostics:`` section (else its output's end)."""
    start = output.find("Diagnostics:")
    if start == -1:
        return output[-limit:]
    end = output.find("\nOutputs:", start)
    if end == -1:
        end = output.find("\nResources:", start)
    return output[start:end if end != -1 else None][:limit]


def up(stack: str, quiet: bool = False) -> float:
    """``pulumi up`` on the stack (created on first use); the wall time in seconds."""
    return run(stack, "up", quiet)


def down(stack: str, quiet: bool = False) -> float:
    """``pulumi destroy``: every process stopped; data directories are kept."""
    return run(stack, "destroy", quiet)


def refresh(stack: str, quiet: bool = True) -> float:
    return run(stack, "refresh", quiet)
