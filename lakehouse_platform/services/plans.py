"""What each target needs from a service: a container plan, a local process plan, an ECS plan, deployment steps.

Plans are plain data rendered from the spec (secrets as placeholders); the targets turn them into
resources. The helpers at the end render the small formats several services share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lakehouse_platform.model import ServiceSpec, parse_size
from lakehouse_platform.services.context import Side

if TYPE_CHECKING:
    from lakehouse_platform.artifacts.artifact import Artifact


@dataclass
class ContainerPlan:
    """What the docker target needs to run one service as a container."""

    command: list[str] = field(default_factory=list)
    entrypoint: list[str] | None = None  # replaces the image's entrypoint (jobs that run a shell)
    env: dict[str, str] = field(default_factory=dict)
    uploads: dict[str, str] = field(default_factory=dict)  # path in container -> file content
    upload_sources: dict[str, str] = field(default_factory=dict)  # path in container -> host file
    bind_mounts: dict[str, str] = field(default_factory=dict)  # host dir (under the stack's state) -> container path
    host_mounts: dict[str, str] = field(default_factory=dict)  # absolute host path (artifact) -> path, read-only
    volumes: dict[str, str] = field(default_factory=dict)  # volume name suffix -> container path
    user: str | None = None
    network_mode_service: str | None = None  # share another service's network namespace (sidecar)
    build_dockerfile: str | None = None  # the image is built from this Dockerfile (repo-relative), not pulled
    # Bind-mount targets ``user`` must own: the docker target hands them over (a root job in the same image)
    # before the container starts (the daemon creates a missing bind source as root).
    owned_binds: tuple[str, ...] = ()


@dataclass
class NativePlan:
    """What the native target needs to run one service as a local process on 127.0.0.1."""

    argv: list[str]
    health: dict[str, Any]  # LocalService health check (http url / tcp port / command argv)
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # absolute path -> content
    setup: list[list[str]] = field(default_factory=list)  # once, before the first start
    post_start: list[list[str]] = field(default_factory=list)  # after every healthy start
    pre_stop: list[list[str]] = field(default_factory=list)  # before the process stops for an update (best effort)
    run_as_user: str | None = None
    ulimit_nofile: int | None = None
    stop_grace_s: float = 15.0
    stop_signal: Literal["SIGTERM", "SIGINT"] = "SIGTERM"  # the signal that asks for a clean stop


@dataclass
class EcsPlan:
    """What the aws target needs to run one service as an ECS Fargate task.

    ``files`` are written before ``command`` is exec'd (Fargate has no bind mounts of host files);
    they must hold no secret: secrets reach the process as whole environment values.
    """

    env: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    entry_point: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainerHost:
    """What the docker target has on the host for one container: files it mounts, the stack's state."""

    state_dir: Path  # the lab's state directory (bind-mount sources live under it)
    artifact: Artifact | None = None  # host files the container mounts (``OnDocker.lab_artifact``)


@dataclass(frozen=True)
class NativeHost:
    """Where one service lives on the host: its home (data dir) and what it is built from."""

    home: Path  # the service's data directory under the stack's state directory
    artifact: Artifact | None  # what the service runs (None for services without an artifact)
    java_home: Path | None = None
    # The project's own Python processes (operations, post-start tasks, launchers): the operations runtime's
    # interpreter (lakehouse_platform/artifacts/runtime.py) and the stack's copy of the code (NativeRuntime), never a
    # checkout.
    python: str = "python3"
    code_root: Path | None = None
    state_dir: Path | None = None  # the stack's state directory (other services' homes are under it)
    # Every artifact the stack resolved, by service: a service may run another's tools (the backups
    # run the platform PostgreSQL's own pg_dump).
    artifacts: Mapping[str, Artifact] = field(default_factory=dict)


@dataclass(frozen=True)
class StepHost:
    """What a deployment step sees of the host: the stack's state, its artifact, how the host reaches services."""

    state_dir: Path  # the stack's state directory (native homes and lab bind mounts live under it)
    artifact: Artifact | None = None  # what the step ships (``OnNative.artifact`` / ``OnDocker.lab_artifact``)
    side: Side = Side.EXTERNAL  # the Pulumi program runs on the host: it reaches services from outside


@dataclass
class StepPlan:
    """A deployment step that is not a process (register a connector, set up a CDC source, submit a job).

    The docker and native targets make it ``resource(name, **inputs, opts=...)``, a typed dynamic
    resource run from the host. ``inputs`` may hold secret placeholders (``secret(name)``, at any
    depth): the target renders them into Pulumi secrets. ``after`` names what the step waits for
    beyond its own service: other services (waited for where the stack enables them) and earlier
    steps. ``outputs`` are the resource's attributes the stack exports under ``export``
    (``jobs``: the streaming job; ``connectors``: what Connect was asked to run).
    """

    name: str  # the resource's name, unique in the stack
    resource: Callable[..., Any]
    inputs: dict[str, Any]
    after: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    export: str = "jobs"


def code_digest(*paths: Path) -> str:
    """sha256 over source files a process runs from the repository: in its environment, a change of the code
    (not only of its config) restarts it on the next ``pulumi up``."""
    import hashlib

    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


#: A JVM hands heap it no longer uses back to the OS: a G1 cycle every 30 s when idle, and after each cycle the heap
#: shrinks to keep at most 30% of it free (the default keeps 70%: Trino held 460 MB committed for 120 MB used).
IDLE_HEAP_FLAGS = ("-XX:G1PeriodicGCInterval=30000", "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30")


def jvm_heap_flag(service: ServiceSpec) -> str:
    """-Xmx for a JVM service, from its heap setting (every JVM gets an explicit heap)."""
    heap = service.heap or service.memory
    return f"-Xmx{parse_size(heap) // (1024 * 1024)}m"


def properties(values: Mapping[str, Any]) -> str:
    """A Java properties file from a mapping, in the mapping's order."""
    return "".join(f"{key}={value}\n" for key, value in values.items())
