"""What a service definition is, and how addresses are resolved on each side of the network.

A service module (one per service, in this package) exports ``SERVICES``: one ``ServiceDefinition``
for the service and one for each of its jobs. A definition is the service's whole definition:
its default spec (layer, pin, image, ports, health, budget, dependencies), how each target runs it
(a container, a local process, an ECS task), what the native target obtains for it (its artifact
recipe), its role as a catalog where it is one, and where it cannot run and why. Targets, the
config loader, the profiles and the policy pack read these definitions through the registry
(``infra.services.registry``); nothing else keeps a table keyed by service name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from infra.spec import PlatformSpec, ServiceSpec, Target, parse_size

if TYPE_CHECKING:
    from infra.artifacts.recipe import Artifact, ArtifactRecipe


class Side(str, Enum):
    """Who is connecting: another service of the platform, or a client on the host."""

    INTERNAL = "internal"
    EXTERNAL = "external"


def host_of(spec: PlatformSpec, service: str, side: Side) -> str:
    """Host name of a service as seen from one side of the network."""
    if spec.target is Target.NATIVE:
        return "127.0.0.1"  # every native service is a local process on loopback
    if spec.target is Target.AWS:
        return f"{service}.{spec.name}.internal"  # Cloud Map private DNS, reachable inside the VPC
    return service if side is Side.INTERNAL else "localhost"


def port_of(spec: PlatformSpec, service: str, port: str, side: Side) -> int:
    """Port number of a named service port as seen from one side of the network."""
    ports = spec.services[service].ports[port]
    if spec.target is Target.AWS or (spec.target is Target.DOCKER and side is Side.INTERNAL):
        return ports.internal
    # Natively every process binds its external port; containers publish theirs on the host.
    return ports.external or ports.internal


def address(spec: PlatformSpec, service: str, port: str, side: Side) -> str:
    """``host:port`` of a service port from one side."""
    return f"{host_of(spec, service, side)}:{port_of(spec, service, port, side)}"


def url(spec: PlatformSpec, service: str, port: str, side: Side, path: str = "", scheme: str = "http") -> str:
    """``http://host:port/path`` of a service port from one side."""
    return f"{scheme}://{address(spec, service, port, side)}{path}"


def gate_of(spec: PlatformSpec, catalog: str) -> str | None:
    """The enabled service that gates ``catalog`` (clients reach the catalog through it), or None."""
    from infra.services.registry import registry

    for definition in registry():
        if definition.fronts == catalog and definition.name in spec.enabled_services():
            return definition.name
    return None


def catalog_url(spec: PlatformSpec, catalog: str, side: Side) -> str:
    """Where clients reach a catalog's REST API: through its gate when it has one, else the catalog itself."""
    from infra.services.registry import registry

    role = registry()[catalog].catalog
    assert role is not None, f"{catalog} is not a catalog"
    gate = gate_of(spec, catalog)
    return url(spec, gate, "http", side, role.path) if gate else url(spec, catalog, "http", side, role.path)


def secret(name: str) -> str:
    """A placeholder for a named secret inside a command, environment value or file.

    Plans stay plain strings; the target swaps placeholders for Pulumi secrets, so the rendered
    value is itself a secret in state and outputs.
    """
    return "${secret:" + name + "}"


SECRET_TOKEN = re.compile(r"\$\{secret:([a-z0-9-]+)\}")
#: A value derived from a named secret, never the secret itself: ``${sha256:name}`` (hex digest, what a
#: gate compares tokens against) or ``${pbkdf2:name}`` (a salted PBKDF2 hash, what Trino's password file
#: holds). Rendered like secrets (the result is still a Pulumi secret), and deterministic, so an
#: unchanged secret renders the same file and restarts nothing.
DERIVED_TOKEN = re.compile(r"\$\{(sha256|pbkdf2):([a-z0-9-]+)\}")


def sha256_of(name: str) -> str:
    """A placeholder for the sha256 hex digest of a named secret."""
    return "${sha256:" + name + "}"


def pbkdf2_of(name: str) -> str:
    """A placeholder for the PBKDF2 hash of a named secret, in Trino's password-file form."""
    return "${pbkdf2:" + name + "}"

#: Values only the aws target knows once its resources exist (ARNs), by name.
VENDING_ROLE_ARN = "vending-role-arn"  # the catalogs' credential-vending role
KMS_KEY_ARN = "kms-key-arn"  # the platform's customer-managed key (the warehouse's SSE-KMS key)
PLATFORM_TOKEN = re.compile(r"\$\{platform:([a-z0-9-]+)\}")


def platform_value(name: str) -> str:
    """A placeholder for a value the target fills once it exists (``VENDING_ROLE_ARN``, ``KMS_KEY_ARN``).

    An ECS plan's environment may hold one; the aws target swaps it for the resource's output.
    """
    return "${platform:" + name + "}"


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
    artifact: Artifact | None = None  # host files the container mounts (``ServiceDefinition.lab_artifact``)


@dataclass(frozen=True)
class NativeHost:
    """Where one service lives on the host: its home (data dir) and what it is built from."""

    home: Path  # the service's data directory under the stack's state directory
    artifact: Artifact | None  # what the service runs (None for services without an artifact)
    java_home: Path | None = None
    python: str = "python3"  # the project's interpreter, for post-start tasks
    project_root: Path | None = None
    state_dir: Path | None = None  # the stack's state directory (other services' homes are under it)
    # Every artifact the stack resolved, by service: a service may run another's tools (the backups
    # run the platform PostgreSQL's own pg_dump).
    artifacts: Mapping[str, Artifact] = field(default_factory=dict)


@dataclass(frozen=True)
class StepHost:
    """What a deployment step sees of the host: the stack's state, its artifact, how the host reaches services."""

    state_dir: Path  # the stack's state directory (native homes and lab bind mounts live under it)
    artifact: Artifact | None = None  # what the step ships (``ServiceDefinition.artifact`` / ``lab_artifact``)
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


@dataclass(frozen=True)
class ServiceContext:
    """Everything a service definition may read while rendering: the spec and its own name."""

    spec: PlatformSpec
    name: str

    @property
    def service(self) -> ServiceSpec:
        return self.spec.services[self.name]

    def listen_port(self, port: str) -> int:
        """The port number this service listens on for a named port, on this target."""
        return port_of(self.spec, self.name, port, Side.INTERNAL)

    def url(self, service: str, port: str, side: Side = Side.INTERNAL, path: str = "") -> str:
        return url(self.spec, service, port, side, path)

    def address(self, service: str, port: str, side: Side = Side.INTERNAL) -> str:
        return address(self.spec, service, port, side)

    def enabled(self, service: str) -> bool:
        return service in self.spec.enabled_services()


@dataclass(frozen=True)
class CatalogRole:
    """What a catalog service offers engines: where its REST API is and how clients authenticate.

    ``client_properties`` are Iceberg REST client properties (the names PyIceberg, Spark and
    Flink share: ``credential``, ``scope``, ``header.X-Iceberg-Access-Delegation``); secret
    values are placeholders. ``trino_properties`` are the same settings in Trino's catalog
    property names.
    """

    path: str
    engine_name: str  # the name engines know it by (Trino's catalog file, the profiles' catalog)
    warehouse: Callable[[PlatformSpec], str]
    client_properties: Callable[[ServiceContext], dict[str, str]] = lambda ctx: {}
    trino_properties: Callable[[ServiceContext], dict[str, str]] = lambda ctx: {}
    vends_credentials: bool = False
    #: The jobs after which the catalog serves ``warehouse`` (it exists, with its storage): what an
    #: engine that queries the catalog waits for (``ServiceDefinition.uses_catalogs``).
    ready_after: tuple[str, ...] = ()
    # Where the catalog keeps its pointers, for the recovery layer's backups: a PostgreSQL database
    # of the platform's server, or a SQLite file (``sqlite_file``: its path on this target's host side).
    database: str | None = None
    sqlite_file: Callable[[ServiceContext, Path], str | None] | None = None  # None: not on SQLite in this spec


@dataclass(frozen=True)
class CertificateSpec:
    """A TLS certificate a service serves with: issued once by the platform (governance), renewed near expiry.

    Its key and certificate reach the service as the secrets ``<name>-pem`` (key then certificate, one PEM)
    and ``<name>-cert`` (the certificate alone); clients verify against the ``certificates`` stack output.
    """

    name: str  # e.g. trino-tls
    hosts: Callable[[ServiceContext], list[str]]  # DNS names and IP addresses the certificate is valid for


@dataclass(frozen=True)
class SecretSpec:
    """A secret a service uses: its placeholder name, its stack config key, and where a lab default applies."""

    name: str  # the placeholder name (``secret(name)``)
    config_key: str  # ``lakehouse:<config_key>``, set with ``pulumi config set --secret``
    lab_default: str  # used on docker and native when the stack sets none (still a Pulumi secret)
    managed_on: Mapping[Target, str] = field(default_factory=dict)  # target -> who keeps it instead
    # A secret made from others (no config key, no lab default): a template of placeholders, rendered
    # once the others are known (e.g. Trino's password file: each identity's password, hashed).
    derive: Callable[[PlatformSpec], str] | None = None


ContainerRenderer = Callable[[ServiceContext, ContainerHost], ContainerPlan]
NativeRenderer = Callable[[ServiceContext, NativeHost], NativePlan]
EcsRenderer = Callable[[ServiceContext], EcsPlan]
StepsRenderer = Callable[[ServiceContext, StepHost], list[StepPlan]]
SpecCheck = Callable[[PlatformSpec], list[str]]  # "key.path: what is wrong" lines (empty: fine)


@dataclass(frozen=True)
class ServiceDefinition:
    """One service (or job) of the platform: its defaults and how each target runs it."""

    name: str
    default: Mapping[str, Any]
    summary: str = ""  # one line for the README and the review
    job_of: str | None = None  # a job or sidecar that follows its service's ``enabled``
    container: ContainerRenderer | None = None
    native: NativeRenderer | None = None
    native_folded: str | None = None  # natively no process of its own: what does its work instead
    ecs: EcsRenderer | None = None
    managed: Mapping[Target, str] = field(default_factory=dict)  # target -> the managed service used instead
    unavailable: Mapping[Target, str] = field(default_factory=dict)  # target -> why it cannot run there
    artifact: ArtifactRecipe | None = None  # what the native process runs
    lab_artifact: ArtifactRecipe | None = None  # host files the lab's container mounts
    # Host files the aws target uploads for the managed counterpart of this service (MSK Connect's
    # custom plugins, the Flink application's jar), needed when ``cloud_enabled(spec)`` says the stack runs it.
    cloud_artifact: ArtifactRecipe | None = None
    cloud_enabled: Callable[[PlatformSpec], bool] | None = None
    java: int | None = None  # JDK major the native process needs
    catalog: CatalogRole | None = None
    secrets: tuple[SecretSpec, ...] = ()  # on aws each must be set in the stack's secret config
    #: Also waits for these where the stack enables them (the loader adds them to ``depends_on``):
    #: helpers that exist on one target only, such as the lab's bucket job or loopback sidecar.
    after: tuple[str, ...] = ()
    #: Queries the catalogs: waits for every enabled catalog's ``CatalogRole.ready_after`` jobs.
    uses_catalogs: bool = False
    #: Deployment steps that are not processes (register a connector, submit the streaming job), in
    #: order; docker and native make each a typed dynamic resource, after this service's process when
    #: it has one. A service with steps and no process is only its steps.
    steps: StepsRenderer | None = None
    check: SpecCheck | None = None  # validation of the service's own settings, run with the spec's
    certificates: tuple[CertificateSpec, ...] = ()  # TLS certificates the platform issues for it
    fronts: str | None = None  # the catalog this service gates: clients reach that catalog through it

    def runs_on(self, target: Target) -> bool:
        """Whether a target has a way to run this service (a renderer, a fold or a managed service)."""
        if target in self.unavailable:
            return False
        renderer = {Target.DOCKER: self.container or self.steps, Target.NATIVE: self.native or self.native_folded
                    or self.steps, Target.AWS: self.ecs}[target]
        return renderer is not None or target in self.managed

    def why_not_on(self, target: Target) -> str | None:
        """The reason this service cannot run on ``target``, or None when it can."""
        if target in self.unavailable:
            return self.unavailable[target]
        if not self.runs_on(target):
            return f"the {target.value} target has no way to run it"
        return None


def code_digest(*paths: Path) -> str:
    """sha256 over source files a process runs from the repository: in its environment, a change of the code
    (not only of its config) restarts it on the next ``pulumi up``."""
    import hashlib

    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def jvm_heap_flag(service: ServiceSpec) -> str:
    """-Xmx for a JVM service, from its heap setting (every JVM gets an explicit heap)."""
    heap = service.heap or service.memory
    return f"-Xmx{parse_size(heap) // (1024 * 1024)}m"


def properties(values: Mapping[str, Any]) -> str:
    """A Java properties file from a mapping, in the mapping's order."""
    return "".join(f"{key}={value}\n" for key, value in values.items())
