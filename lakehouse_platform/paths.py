"""Where things are on the host: the package's own files, the Pulumi project being run, stack state, the cache.

Two roots, never mixed up:

* the package (``PACKAGE_DIR``): its code and every data file it ships (jar locks, the operations image's
  Dockerfile and lock, the policy pack, the lab's scripts), wherever it is installed (a wheel in a team's
  virtualenv, or this repository's editable install);
* the Pulumi project being run (``project_root``): the directory with ``Pulumi.yaml`` that holds the stack files,
  whose ``lakehouse:extends`` names a stack file beside them, whose local backend is ``<project>/.pulumi-state``
  and whose reports are written under it. A team's repository, or this one.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The package's own directory: its modules and its data files (found here, never through a checkout).
PACKAGE_DIR = Path(__file__).resolve().parent
#: What ``PACKAGE_DIR`` sits in (site-packages, or this repository): code paths relative to it name modules
#: (``lakehouse_platform/runtime/...``), the same wherever the package is installed.
PACKAGE_PARENT = PACKAGE_DIR.parent
#: The variable that names the Pulumi project for every command (``lakehouse -C DIR`` sets it; subprocesses
#: inherit it).
PROJECT_ENV = "LAKEHOUSE_PROJECT"
PROJECT_FILE = "Pulumi.yaml"

#: The state root of a root user (services such as PostgreSQL run as their own system user and must reach it).
SYSTEM_STATE_ROOT = Path("/var/lib/lakehouse-platform")


class ProjectNotFound(RuntimeError):
    """No Pulumi project where a command looked for one; the message says where it looked and what to do."""


def find_project(start: Path) -> Path | None:
    """The nearest directory from ``start`` upwards that holds a ``Pulumi.yaml`` (as the Pulumi CLI looks)."""
    for directory in (start, *start.parents):
        if (directory / PROJECT_FILE).is_file():
            return directory
    return None


def project_root() -> Path:
    """The Pulumi project being run: ``$LAKEHOUSE_PROJECT`` if set (it must hold a ``Pulumi.yaml``), else the
    nearest directory from the working directory upwards that holds one (the Pulumi CLI runs a program with its
    project directory as the working directory, so the program finds its own project this way too)."""
    named = os.environ.get(PROJECT_ENV)
    if named:
        directory = Path(named).expanduser().resolve()
        if not (directory / PROJECT_FILE).is_file():
            raise ProjectNotFound(f"{PROJECT_ENV}={named}: no {PROJECT_FILE} in {directory}")
        return directory
    found = find_project(Path.cwd().resolve())
    if found is None:
        raise ProjectNotFound(f"no {PROJECT_FILE} in {Path.cwd()} or any directory above it: run the command in "
                              "your Pulumi project, or name it with -C DIR")
    return found


def reports_dir() -> Path:
    """Where reports go (the probes' JUnit XML, the governance matrix): ``<project>/reports``, or ``./reports``
    where no project is around (probes run on an outputs file)."""
    found = os.environ.get(PROJECT_ENV) or find_project(Path.cwd().resolve())
    return (Path(found) if found else Path.cwd()) / "reports"


def state_root() -> Path:
    """Where stacks keep their data on this host (native data dirs and logs, lab bind mounts): never in a checkout.

    ``$LAKEHOUSE_STATE_DIR`` if set; else ``/var/lib/lakehouse-platform`` for root (a service that runs as its
    own user, PostgreSQL, must traverse to its data: /root is closed); else
    ``${XDG_STATE_HOME:-~/.local/state}/lakehouse-platform``. A stack's directory is named after the stack
    (``stack_state_dir``), so a renamed, moved or second checkout deploying the same stack finds the same data,
    and running services never lose the ground under them when a checkout moves.
    """
    if os.environ.get("LAKEHOUSE_STATE_DIR"):
        return Path(os.environ["LAKEHOUSE_STATE_DIR"])
    if os.geteuid() == 0:
        return SYSTEM_STATE_ROOT
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "lakehouse-platform"


def stack_state_dir(stack: str, configured: str | None = None) -> Path:
    """A stack's state directory: its ``state_dir`` setting if it has one, else ``<state root>/<stack>``."""
    return Path(configured) if configured else state_root() / stack


def cache_base() -> Path:
    """``${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform}``: outside the repo, so a fresh clone finds it warm."""
    return Path(os.environ.get("LAKEHOUSE_CACHE") or Path.home() / ".cache" / "lakehouse-platform").expanduser()
