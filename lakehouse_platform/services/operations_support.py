"""What the operations services share: the one operations image, its user, and the schedulers' plan.

Every piece of the project's own Python that runs in a container (the metrics exporter, the catalog gate,
the maintenance scheduler, the catalog backups) runs from one image, ``runtime/image/Dockerfile``, built from
the installed package on the hash-pinned ``runtime/image/operations.lock`` (pyproject's ``operations`` group):
nothing is installed when a container starts. They run as one user (``OPERATIONS_USER``), and the state they share
(the run record, its locks, the backups) is handed to that user before they start (``owned_binds``).

The two schedulers run ``python -m lakehouse_platform.runtime scheduler`` (one role each) with a rendered
``operations.json``: natively from the project with its own interpreter, in the lab from the image.
Not a service module: the registry lists ``maintenance_scheduler`` and ``catalog_backup``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lakehouse_platform.paths import PACKAGE_DIR
from lakehouse_platform.placeholders import secret
from lakehouse_platform.runtime.config import CONFIG_FILE, ENV_SECRET_PREFIX, OperationsConfig
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan, NativeHost
from lakehouse_platform.version import PLATFORM_VERSION

if TYPE_CHECKING:
    from lakehouse_platform.model import PlatformSpec

APSCHEDULER_VERSION = "3.11.3"  # requirements.lock's (a unit test keeps them equal)
#: The one operations image, tagged with the platform's version (pyproject.toml, ``lakehouse_platform.version``), built
# from
#: ``OPERATIONS_DOCKERFILE`` by the docker target.
OPERATIONS_IMAGE = f"lakehouse/operations:{PLATFORM_VERSION}"
#: Its build context: the package's own directory, wherever it is installed, as its ``.dockerignore`` admits it
#: (``operations_context_files``); the Dockerfile and the lock are package data, relative to it.
OPERATIONS_CONTEXT = PACKAGE_DIR
OPERATIONS_DOCKERFILE = "runtime/image/Dockerfile"
#: The image's user (runtime/image/Dockerfile): every operations container runs as it.
OPERATIONS_USER = "10001:10001"
# The container's view: its config, and the stack's state at the same relative paths as on the host.
CONTAINER_CONFIG = f"/etc/lakehouse/{CONFIG_FILE}"
CONTAINER_STATE = "/var/lib/lakehouse"
#: The state the operations write (the run record and its locks, the backups): owned by ``OPERATIONS_USER``.
WRITTEN_STATE = ("operations", "backups")


def operations_context_files(root: Path = OPERATIONS_CONTEXT) -> list[str]:
    """The files of the operations image's build context, relative to ``root``: what ``.dockerignore`` admits, by
    the rules the Docker SDK applies when it sends a context (the lab's builds send the same files)."""
    from docker.utils.build import exclude_paths

    patterns = [line.strip() for line in (root / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    return sorted(p for p in exclude_paths(str(root), patterns, dockerfile=OPERATIONS_DOCKERFILE)
                  if (root / p).is_file())


def container_health_command(port: int) -> list[str]:
    """Docker's health test: the scheduler's /healthz, with the image's own Python (no curl in slim images)."""
    probe = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/healthz', timeout=3)"
    return ["CMD", "python3", "-c", probe]


def catalog_secret_env(spec: PlatformSpec) -> dict[str, str]:
    """``LAKEHOUSE_SECRET_<NAME>`` for each secret the operations config references (``operation_secrets``)."""
    from lakehouse_platform.services.operations_config import operation_secrets

    return {f"{ENV_SECRET_PREFIX}{name.replace('-', '_').upper()}": secret(name) for name in operation_secrets(spec)}


def maintenance_store_env(spec: PlatformSpec) -> dict[str, str]:
    """The store key pair the maintenance runs with: its own identity's (``operations_identity``), never the
    platform's admin key."""
    from lakehouse_platform.runtime.config import ENV_S3_ACCESS_KEY, ENV_S3_SECRET_KEY
    from lakehouse_platform.services.operations_config import operations_identity

    identity = operations_identity(spec)
    return {ENV_S3_ACCESS_KEY: spec.identities[identity].access_key,  # an access key id is not a secret
            ENV_S3_SECRET_KEY: secret(f"s3-secret-key-{identity}")}


def native_config(spec: PlatformSpec, host: NativeHost, pg_bindir: str | None = None) -> OperationsConfig:
    """The operations config as the native processes (and the host's CLI) see the stack."""
    from lakehouse_platform.services.operations_config import host_paths, operations_config

    assert host.state_dir is not None
    return operations_config(spec, host.state_dir.name, host_paths(spec, str(host.state_dir), pg_bindir),
                             Side.INTERNAL)


def container_config(spec: PlatformSpec, stack: str) -> OperationsConfig:
    """The operations config as a lab container sees the stack: internal addresses, its mount points."""
    from lakehouse_platform.services.operations_config import host_paths, operations_config

    return operations_config(spec, stack, host_paths(spec, CONTAINER_STATE), Side.INTERNAL)


def state_mounts(config: OperationsConfig) -> dict[str, str]:
    """Host dirs (relative to the stack's state) -> container paths: the run record, backups, SQLite catalogs."""
    mounts = {"operations": f"{CONTAINER_STATE}/operations"}
    if config.backups is not None:
        mounts["backups"] = f"{CONTAINER_STATE}/backups"
        for source in config.backups.sqlite:
            relative = str(Path(source.path).parent.relative_to(CONTAINER_STATE))
            mounts[relative] = f"{CONTAINER_STATE}/{relative}"
    return mounts


def operations_plan(command: list[str], env: dict[str, str], uploads: dict[str, str],
                    bind_mounts: dict[str, str]) -> ContainerPlan:
    """An operations container: the operations image, its user, the written state handed to that user first."""
    owned = tuple(target for host_dir, target in bind_mounts.items() if host_dir in WRITTEN_STATE)
    return ContainerPlan(command=command, env={"PYTHONUNBUFFERED": "1", **env}, uploads=uploads,
                         bind_mounts=bind_mounts, user=OPERATIONS_USER, owned_binds=owned,
                         build_dockerfile=OPERATIONS_DOCKERFILE)


def container_plan(ctx: ServiceContext, host: ContainerHost, role: str, port: int,
                   env: dict[str, str]) -> ContainerPlan:
    """The scheduler of one role as a lab container, from the operations image."""
    config = container_config(ctx.spec, host.state_dir.name)
    return operations_plan(
        command=["python", "-m", "lakehouse_platform.runtime", "scheduler", "--config", CONTAINER_CONFIG, "--role",
                 role,
                 "--listen", f"0.0.0.0:{port}"],
        env=env, uploads={CONTAINER_CONFIG: config.dump()}, bind_mounts=state_mounts(config))
