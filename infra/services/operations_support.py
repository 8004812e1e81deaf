"""What the two operating-layer services share: the maintenance scheduler and the catalog backups.

Both run ``python -m infra.operations scheduler`` (one role each) with a rendered
``operations.json``: natively from the project with its own interpreter; in the lab as a pinned
image that gets the ``infra/operations`` package uploaded (the code it runs, nothing else of the
project) and installs that package's hash-pinned dependencies into a volume on first start.
Not a service module: the registry lists ``maintenance_scheduler`` and ``catalog_backup``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from infra.operations.config import CONFIG_FILE, ENV_SECRET_PREFIX, OperationsConfig
from infra.paths import PROJECT_ROOT
from infra.services.context import ServiceContext, Side
from infra.services.placeholders import secret
from infra.services.plans import ContainerHost, ContainerPlan, NativeHost

if TYPE_CHECKING:
    from infra.spec import PlatformSpec

APSCHEDULER_VERSION = "3.11.3"  # requirements.lock's (a unit test keeps them equal)
PYTHON_IMAGE = "python:3.11.14-slim-bookworm"
OPERATIONS_DIR = PROJECT_ROOT / "infra" / "operations"
SCHEDULER_REQUIREMENTS = OPERATIONS_DIR / "requirements-scheduler.txt"
BACKUP_REQUIREMENTS = OPERATIONS_DIR / "requirements-backup.txt"
# The container's view: the code, its config, and the stack's state at the same relative paths as on the host.
CONTAINER_CODE = "/opt/lakehouse"
CONTAINER_STATE = "/var/lib/lakehouse"
CONTAINER_VENV = "/opt/venv"


def container_health_command(port: int) -> list[str]:
    """Docker's health test: the scheduler's /healthz, with the image's own Python (no curl in slim images)."""
    probe = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/healthz', timeout=3)"
    return ["CMD", "python3", "-c", probe]


def catalog_secret_env(spec: PlatformSpec) -> dict[str, str]:
    """``LAKEHOUSE_SECRET_<NAME>`` for each secret the operations config references (``operation_secrets``)."""
    from infra.services.operations_config import operation_secrets

    return {f"{ENV_SECRET_PREFIX}{name.replace('-', '_').upper()}": secret(name) for name in operation_secrets(spec)}


def native_config(spec: PlatformSpec, host: NativeHost, pg_bindir: str | None = None) -> OperationsConfig:
    """The operations config as the native processes (and the host's CLI) see the stack."""
    from infra.services.operations_config import host_paths, operations_config

    assert host.state_dir is not None
    return operations_config(spec, host.state_dir.name, host_paths(spec, str(host.state_dir), pg_bindir),
                             Side.INTERNAL)


def container_config(spec: PlatformSpec, stack: str) -> OperationsConfig:
    """The operations config as a lab container sees the stack: internal addresses, its mount points."""
    from infra.services.operations_config import host_paths, operations_config

    return operations_config(spec, stack, host_paths(spec, CONTAINER_STATE), Side.INTERNAL)


def code_uploads() -> dict[str, str]:
    """Container path -> host file: the ``infra/operations`` package (and ``infra/__init__.py``)."""
    files = {f"{CONTAINER_CODE}/infra/__init__.py": str(PROJECT_ROOT / "infra" / "__init__.py")}
    for path in sorted(OPERATIONS_DIR.glob("*.py")):
        files[f"{CONTAINER_CODE}/infra/operations/{path.name}"] = str(path)
    return files


def state_mounts(config: OperationsConfig) -> dict[str, str]:
    """Host dirs (relative to the stack's state) -> container paths: the run record, backups, SQLite catalogs."""
    mounts = {"operations": f"{CONTAINER_STATE}/operations"}
    if config.backups is not None:
        mounts["backups"] = f"{CONTAINER_STATE}/backups"
        for source in config.backups.sqlite:
            relative = str(Path(source.path).parent.relative_to(CONTAINER_STATE))
            mounts[relative] = f"{CONTAINER_STATE}/{relative}"
    return mounts


def container_script(role: str, port: int, install_python: bool = False) -> str:
    """Install the locked dependencies into the volume once (again when the lock changes), then exec the role."""
    requirements = f"{CONTAINER_CODE}/requirements.txt"
    lines = ["set -eu"]
    if install_python:  # an image with pg_dump but no Python (the PostgreSQL image)
        lines.append("command -v python3 >/dev/null || { apt-get update -qq && "
                     "apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null; }")
    lines += [
        f"if ! cmp -s {requirements} {CONTAINER_VENV}/.installed; then",
        f"  python3 -m venv --clear {CONTAINER_VENV}",
        f"  {CONTAINER_VENV}/bin/pip install --no-cache-dir --require-hashes --only-binary=:all: -r {requirements}",
        f"  cp {requirements} {CONTAINER_VENV}/.installed",
        "fi",
        f"exec {CONTAINER_VENV}/bin/python -m infra.operations scheduler --config {CONTAINER_CODE}/{CONFIG_FILE} "
        f"--role {shlex.quote(role)} --listen 0.0.0.0:{port}",
    ]
    return "\n".join(lines)


def container_plan(ctx: ServiceContext, host: ContainerHost, role: str, port: int, requirements: Path,
                   env: dict[str, str], install_python: bool = False) -> ContainerPlan:
    """The scheduler of one role as a lab container."""
    config = container_config(ctx.spec, host.state_dir.name)
    return ContainerPlan(
        entrypoint=["sh", "-c"],
        command=[container_script(role, port, install_python)],
        env={"PYTHONPATH": CONTAINER_CODE, "PYTHONUNBUFFERED": "1", **env},
        uploads={f"{CONTAINER_CODE}/{CONFIG_FILE}": config.dump(),
                 f"{CONTAINER_CODE}/requirements.txt": requirements.read_text()},
        upload_sources=code_uploads(),
        bind_mounts=state_mounts(config),
        volumes={"venv": CONTAINER_VENV},
    )
