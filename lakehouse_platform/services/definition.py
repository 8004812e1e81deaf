"""What a service definition is.

A service package (one per service, in this package) exports ``SERVICES`` from its ``definition`` module: one
``ServiceDefinition`` for the service and one for each of its jobs. A definition is the service's whole definition,
grouped by what reads it:

- its default spec (layer, pin, image, ports, health, budget, dependencies) and what it is (``summary``, ``title``);
- how each target runs it, or why it cannot: ``docker`` (``OnDocker``: its container, what the lab mounts, the image
  the lab builds), ``native`` (``OnNative``: its local process or what does its work instead, its artifact, its
  data's rules), ``aws`` (``OnAws``: its ECS task or the managed service used instead, its ingress, what the stack
  uploads). The three have no default: a type checker lists the ones a new service leaves out;
- what it holds and enforces (``Governance``: its secrets, each identity's secret for it, its certificates, how it
  enforces the grants);
- what the smoke check and the probes ask of it (``ProbeHooks``);
- what it offers the others and how they meet it: its catalog role (``CatalogRole``, whose REST client properties
  every engine renders in its own terms), the capabilities it provides (``provides``: the store, the database, the
  broker...), which the others look up through the registry instead of naming it
  (``lakehouse_platform.services.capabilities``), what its clients get in the ``profiles`` output
  (``ClientProfile``), the checks of the spec it needs (``check``).

Targets, the config loader, the profiles and the policy pack read these definitions through the registry
(``lakehouse_platform.services.registry``); nothing else keeps a table keyed by service name, so no module outside
a service's package names it.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.model import Layer, PlatformSpec, Target
from lakehouse_platform.services.built_image import BuiltImage
from lakehouse_platform.services.capabilities import Capability
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.plans import (
    ContainerHost,
    ContainerPlan,
    EcsPlan,
    NativeHost,
    NativePlan,
    StepHost,
    StepPlan,
)

if TYPE_CHECKING:  # the aws halves import pulumi_aws: reading the registry stays light
    from lakehouse_platform.services.aws_parts import Foundation, PartComponent


@dataclass(frozen=True)
class ArtifactRecipe:
    """How the native target obtains what a service runs.

    ``key`` names the cache entry from the service's pins (so the program and ``make artifacts``
    agree on what a pin means); ``fetch`` obtains it into the cache (downloads, builds, apt) and
    records it under that key. The program only ever looks the key up.
    """

    key: Callable[[ServiceContext], str]
    fetch: Callable[[ServiceContext], Artifact]
    source: str  # where it comes from, for the fetch table and the README
    #: Whether the stack needs it at all (None: whenever the service runs), e.g. a driver for one backend only.
    needed: Callable[[ServiceContext], bool] | None = None


@dataclass(frozen=True)
class Lazy:
    """A function named ``module:attribute``, imported on its first call.

    A service's aws half imports pulumi_aws, which only the aws target needs: its definition names the
    function instead of importing it, so reading the registry (every target, the loader, the policy pack)
    stays light and offline.
    """

    ref: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, attribute = self.ref.partition(":")
        return getattr(importlib.import_module(module), attribute)(*args, **kwargs)


@dataclass(frozen=True)
class AwsPart:
    """One piece of the platform on aws that a service package builds: its managed or ECS counterpart.

    The aws target builds every enabled part after the shared pieces (``aws_parts.Foundation``), layer by layer
    (catalog, compute, orchestration, observability) and in registry order within a layer. ``build`` takes the
    foundation and returns the part's ``aws_parts.PartComponent`` (a child of its layer); ``log_sources`` names the
    CloudWatch log groups the part writes to (source -> group name, None for the platform's name), which exist
    before anything writes to them.
    """

    name: str
    layer: Layer
    build: Callable[[Foundation], PartComponent]
    enabled: Callable[[PlatformSpec], bool]
    log_sources: Callable[[PlatformSpec], dict[str, str | None]] | None = None
    #: Parts of the same layer built before this one when the stack has them (it reads their components): a part's
    #: name, or a capability (the part of the service that provides it).
    after: tuple[str | Capability, ...] = ()
    #: Runs ECS services in its own layer's cluster (the catalog and compute layers always have one).
    cluster: bool = False
    #: Uploads code into the compute layer's private code bucket (a plugin, an application jar).
    uploads_code: bool = False


@dataclass(frozen=True)
class CatalogPrincipals:
    """A catalog that authenticates every identity as a principal of its own, with OAuth2 client credentials.

    Identity ``<id>``'s client id is ``<id>`` and its client secret the per-identity secret ``secret`` (which the
    catalog's definition also declares in ``identity_secrets``, so every target makes it). A client acting as it
    sends ``credential: <id>:<secret>`` and ``scope`` (the Iceberg REST client properties); host profiles say it
    as ``{<id_key>}:{<secret's credentials key>}``, filled from ``credentials.identities.<id>``. The catalog's own
    admin credential (``CatalogRole.admin_secrets``) reaches none of them.
    """

    secret: IdentitySecret  # e.g. polaris-client-secret: identity <id> holds polaris-client-secret-<id>
    scope: str  # the OAuth2 scope a client asks for
    id_key: str  # the client id's key in credentials.identities.<id> (the secret's ``values`` set it)

    def secret_name(self, identity: str) -> str:
        return self.secret.secret_name(identity)

    @property
    def secret_key(self) -> str:
        """Its key in ``credentials.identities.<id>`` and the profiles' placeholder (``polaris_client_secret``)."""
        return self.secret.credentials_key

    def properties(self, identity: str, client_secret: str, token_uri: str | None = None) -> dict[str, str]:
        """The REST client properties of one identity (``client_secret``: a placeholder or a reference), with the
        catalog's token endpoint when given (``oauth2-server-uri``: clients warn, and will fail, without it)."""
        props = {"credential": f"{identity}:{client_secret}", "scope": self.scope}
        if token_uri is not None:
            props["oauth2-server-uri"] = token_uri
        return props


@dataclass(frozen=True)
class CatalogRole:
    """What a catalog service offers engines: where its REST API is and how clients authenticate.

    ``client_properties`` are the catalog's settings in the one neutral form every engine reads: Iceberg
    REST client properties (the names PyIceberg, Spark and Flink share: ``credential``, ``scope``,
    ``header.X-Iceberg-Access-Delegation``), secret values as ``secret(name)`` placeholders. A catalog
    never writes an engine's own property names: each engine package renders these into its own (Trino's
    catalog files: ``lakehouse_platform.services.trino.config.rest_properties``) and refuses, by name, a property it
    has no rendering for, so a new catalog cannot be silently half-configured in one engine.
    """

    path: str
    engine_name: str  # the name engines know it by (Trino's catalog file, the profiles' catalog)
    warehouse: Callable[[PlatformSpec], str]
    client_properties: Callable[[ServiceContext], dict[str, str]] = lambda ctx: {}
    vends_credentials: bool = False
    #: The jobs after which the catalog serves ``warehouse`` (it exists, with its storage): what an
    #: engine that queries the catalog waits for (``ServiceDefinition.uses_catalogs``).
    ready_after: tuple[str, ...] = ()
    # Where the catalog keeps its pointers, for the recovery layer's backups: a PostgreSQL database
    # of the platform's server, or a SQLite file (``sqlite_file``: its path on this target's host side).
    database: str | None = None
    sqlite_file: Callable[[ServiceContext, Path], str | None] | None = None  # None: not on SQLite in this spec
    # Where the catalog lays tables out as ``<namespace>/<table>/`` on storage (``s3://bucket/prefix/``), which
    # rebuild-from-storage scans; None: not by name (Lakekeeper's uuid directories: restore its database instead).
    tables_location: Callable[[PlatformSpec], str | None] = lambda spec: None
    #: Each identity a principal of its own (None: clients authenticate with no credential of theirs, or at a gate).
    principals: CatalogPrincipals | None = None
    #: The secrets that are the catalog's root/admin credential, and the only services (its bootstrap jobs)
    #: that may hold them: the policy pack refuses any other holder (``catalog-admin-credential-in-bootstrap``).
    admin_secrets: tuple[str, ...] = ()
    admin_jobs: tuple[str, ...] = ()
    admin_client_id: str | None = None  # the admin's OAuth2 client id (Polaris's root)


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


@dataclass(frozen=True)
class IdentitySecret:
    """A secret every identity of the stack holds for one service: its own credential there.

    Trino's password of each identity's user is one; a Polaris principal's client secret or a Lakekeeper
    OpenID client's secret would be others. For each identity ``<id>`` the stack gets the Pulumi secret
    ``<kind>-<id>``, read from the stack config key ``<config_key><Id>`` (``trinoPasswordReader``) unless
    the identity names its own under ``identities.<id>.secret_keys.<kind>``; on docker and native a lab
    default applies when the key is unset, on aws an unset key stops the run (when ``needed_on_aws``) with
    the command that sets it. Clients find it in ``credentials.identities.<id>.<kind with _>`` (the
    profiles' ``{trino_password}`` placeholder), beside ``values`` (not secret, e.g. ``trino_user``).
    Secrets exist only while the declaring service is enabled.
    """

    kind: str  # e.g. trino-password: the secret's name is ``<kind>-<identity>``
    config_key: str  # the stack config key's prefix, e.g. trinoPassword (-> trinoPassword<Identity>)
    what: str  # how errors name it, e.g. "Trino password"
    needed_on_aws: bool = True  # on aws the stack must set it (lab defaults never reach the cloud)
    #: Not secret, beside the secret in each identity's credentials: identity name -> {credentials key: value}.
    values: Callable[[str], Mapping[str, str]] | None = None

    def secret_name(self, identity: str) -> str:
        """The Pulumi secret of one identity (``trino-password-reader``)."""
        return f"{self.kind}-{identity}"

    @property
    def credentials_key(self) -> str:
        """Its key in ``credentials.identities.<identity>`` and the profiles' placeholder (``trino_password``)."""
        return self.kind.replace("-", "_")

    def lab_default(self, identity: str) -> str:
        """The value docker and native use when the stack sets none (still a Pulumi secret)."""
        return f"lab-{identity}-{self.kind}"


@dataclass(frozen=True)
class ClientProfile:
    """What a service hands its clients in the ``profiles`` stack output (secrets as ``{placeholders}``).

    ``client(spec, side)`` is the profile a client on one side of the network uses: the host's (external
    addresses) is ``profiles.host.<key>``, where the probes and the smoke check find it; the platform's own
    processes render theirs for their side (the operations' maintenance engine). ``services`` gives the
    entries for clients running next to the services (internal addresses), each under
    ``profiles.services.<its key>``.
    """

    key: str  # e.g. kafka_connect
    client: Callable[[PlatformSpec, Side], Any] | None = None
    services: Callable[[PlatformSpec], Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class AwsIngress:
    """One hop the aws network admits to a service: ``port`` (its named port) into ``group`` from ``source``.

    Groups are the shared network's security groups (``lb``, ``catalogs``, ``engines``, ``db``, ``msk``,
    ``connect``); each ingress comes with the matching egress from ``source``. Declared by the service that
    listens, so the network admits nothing a service did not ask for and names no service.
    """

    group: str
    port: str | int  # one of the service's named ports (its internal number), or a port fixed by AWS
    source: str
    why: str
    back: str = ""  # the matching egress rule's description (``why`` when empty)
    to_port: int | None = None  # a range up to this port (MSK's broker-to-broker ports)
    #: Whether the stack has this hop (None: whenever the service or its aws part is in the stack), e.g. with MSK only.
    when: Callable[[PlatformSpec], bool] | None = None


@dataclass(frozen=True)
class RestartDrain:
    """Natively, what a service needs done around a restart of a service it depends on, found by the capability
    that service provides: commands the restarting service runs before it stops (``stop``) and once it is healthy
    again (``resume``). ``commands(ctx, host, action)`` is handed the restarting service's context and host.

    Kafka Connect's source connectors stop with their offsets committed before the broker restarts: an
    at-least-once source would otherwise produce again what it produced since its last offset flush.
    """

    around: Capability  # the capability of the service whose restart it drains around (the broker)
    commands: Callable[[ServiceContext, NativeHost, str], list[list[str]]]


@dataclass(frozen=True)
class ProbeHooks:
    """What the smoke check and the post-deploy probes ask of a service, each answered by its own package.

    Each is a function of the package, usually a ``Lazy`` reference (``module:function``) imported only by the
    check that asks, so reading the registry never imports a client library. The probes ask the registry which
    services answer a question instead of listing them (``lakehouse_platform.services.probing`` says what a hook is
    handed):

    - ``smoke(outputs) -> [(layer, check, ok, detail)]``: the service's lines of ``make smoke`` (none where
      the stack does not run it);
    - ``version(stack, hands) -> {manifest name: VersionReading}``: the version manifest's readings of the
      running service (empty where it cannot read here);
    - ``engine(stack) -> EngineProbe``: the service as an engine of the cross-engine probes (the same table's
      count through every engine, the read-only identity refused through every engine);
    - ``support``: the module of the package the probes use for this service's own experiments, found by a
      capability it provides (the streaming writer's REST client, a throwaway reference catalog).
    """

    smoke: Callable[[Mapping[str, Any]], list[tuple[str, str, bool, str]]] | None = None
    version: Callable[..., Mapping[str, Any]] | None = None
    engine: Callable[..., Any] | None = None
    support: str | None = None


@dataclass(frozen=True)
class Metrics:
    """Where a service serves its metrics: the ``observability.<key>`` stack output, and (``scraped``) a job of
    the metrics store (the ``METRICS`` capability's provider) named after the service."""

    key: str  # its key in the observability output, e.g. exporter
    path: str = "/metrics"
    port: str = "http"
    scraped: bool = True  # the metrics store scrapes it (the store itself: False, it scrapes itself)


@dataclass(frozen=True)
class GrantsEnforcement:
    """How a service enforces the stack's grants (``PlatformSpec.access_of``, rendered into its own config): one
    line for the review's "Enforced by", and what of the grants it cannot say on a stack (the review's flags)."""

    what: str  # e.g. "every REST request of the fixture, per namespace"
    gaps: Callable[[PlatformSpec], list[str]] | None = None  # lines: what it cannot enforce of this stack's grants


ContainerRenderer = Callable[[ServiceContext, ContainerHost], ContainerPlan]
NativeRenderer = Callable[[ServiceContext, NativeHost], NativePlan]
EcsRenderer = Callable[[ServiceContext], EcsPlan]
StepsRenderer = Callable[[ServiceContext, StepHost], list[StepPlan]]
SpecCheck = Callable[[PlatformSpec], list[str]]  # "key.path: what is wrong" lines (empty: fine)
#: Why this change of the service cannot be made in place on the data it already holds on this host (what its
#: data directory records against what the stack now runs), with the documented procedure; None: in place.
InPlaceCheck = Callable[[ServiceContext, NativeHost], str | None]


@dataclass(frozen=True, kw_only=True)
class OnDocker:
    """How the docker target (the lab) runs a service: its container and what the lab gives it."""

    container: ContainerRenderer | None = None  # None: nothing of its own but its deployment steps
    lab_artifact: ArtifactRecipe | None = None  # host files the lab's container mounts
    #: The image the lab builds for it from its native artifact (``lab.images: built``); a job runs its service's.
    image: BuiltImage | None = None
    #: Why it cannot run on docker (a validation error when a lab stack enables it); None: it can.
    unavailable: str | None = None


@dataclass(frozen=True, kw_only=True)
class OnNative:
    """How the native target runs a service as a local process: the process, what it runs from, its data's rules."""

    process: NativeRenderer | None = None
    folded: str | None = None  # natively no process of its own: what does its work instead
    artifact: ArtifactRecipe | None = None  # what the native process runs
    java: int | None = None  # JDK major the native process needs
    #: What refuses a change its data cannot survive in place (a PostgreSQL major, a Flink job graph whose savepoints
    #: no longer restore): read from its data on this host when the program starts, so ``pulumi preview`` and
    #: ``pulumi up`` stop before any resource is touched, with the procedure (docs/operations/upgrades.md).
    in_place: InPlaceCheck | None = None
    #: What it needs done around a restart of a service it depends on (its commands run by that service).
    drains: tuple[RestartDrain, ...] = ()
    #: Why it cannot run natively (a validation error when a native stack enables it); None: it can.
    unavailable: str | None = None


@dataclass(frozen=True, kw_only=True)
class OnAws:
    """How the aws target runs a service: an ECS task, or the managed service used instead; what the network
    admits to it; what the stack uploads for it. (A package's own aws parts, its components, are ``AWS_PARTS``.)"""

    task: EcsRenderer | None = None  # its ECS Fargate task
    managed: str | None = None  # the managed service used instead (RDS, MSF, EventBridge, ...)
    #: What the aws network admits to it (with the matching egress from each source).
    ingress: tuple[AwsIngress, ...] = ()
    #: Host files the aws target uploads for its managed counterpart (MSK Connect's custom plugins, the Flink
    #: application's jar), where its recipe's ``needed`` says the stack runs it.
    upload: ArtifactRecipe | None = None
    #: Why it cannot run on aws (a validation error when a cloud stack enables it); None: it can.
    unavailable: str | None = None


@dataclass(frozen=True, kw_only=True)
class Governance:
    """What a service holds and enforces: its secrets, each identity's secret for it, its TLS certificates, and how
    it enforces the stack's grants where it is an enforcement point."""

    secrets: tuple[SecretSpec, ...] = ()  # on aws each must be set in the stack's secret config
    #: Secrets each identity holds for this service (its users' passwords, its principals' client secrets).
    identity_secrets: tuple[IdentitySecret, ...] = ()
    certificates: tuple[CertificateSpec, ...] = ()  # TLS certificates the platform issues for it
    #: How it enforces the stack's grants (the review prints it).
    enforces_grants: GrantsEnforcement | None = None


@dataclass(frozen=True, kw_only=True)
class ServiceDefinition:
    """One service (or job) of the platform: its defaults, how each target runs it, what it holds, what the probes
    ask of it, and what it offers the others.

    ``docker``, ``native`` and ``aws`` have no default: a new service says how each target runs it, or why it cannot
    (a type checker lists the ones it leaves out).
    """

    name: str
    default: Mapping[str, Any]
    docker: OnDocker
    native: OnNative
    aws: OnAws
    summary: str = ""  # one line for the README and the review
    title: str = ""  # how messages name it to a person ("Trino"); its name when empty
    job_of: str | None = None  # a job or sidecar that follows its service's ``enabled``
    governance: Governance = field(default_factory=Governance)
    #: What the smoke check and the probes ask of it.
    probes: ProbeHooks = field(default_factory=ProbeHooks)
    catalog: CatalogRole | None = None  # its role as a catalog, where it is one
    #: Capabilities it offers the other services (``lakehouse_platform.services.capabilities``): they reach "the
    #: store" or "the database" through the registry (``Registry.provider``), never by this service's name.
    provides: tuple[Capability, ...] = ()
    #: Also waits for these where the stack enables them (the loader adds them to ``depends_on``): its own helpers
    #: that exist on one target only (a loopback sidecar), or another service by the capability it provides (the
    #: warehouse bucket's job, the database), never by that service's name.
    after: tuple[str | Capability, ...] = ()
    #: Queries the catalogs: waits for every enabled catalog's ``CatalogRole.ready_after`` jobs.
    uses_catalogs: bool = False
    fronts: str | None = None  # the catalog this service gates: clients reach that catalog through it
    #: Deployment steps that are not processes (register a connector, submit the streaming job), in order; docker
    #: and native make each a typed dynamic resource, after this service's process when it has one. A service with
    #: steps and no process is only its steps.
    steps: StepsRenderer | None = None
    #: Validation of the spec this service needs (its own settings, and what it needs of the rest: a store for its
    #: identities, a scheduler for declared maintenance), run with the spec's validation on every stack, whether or
    #: not the service is enabled.
    check: SpecCheck | None = None
    #: What its clients get in the ``profiles`` stack output.
    profile: ClientProfile | None = None
    #: Databases it keeps on the platform's database (the ``DATABASE`` provider creates them, whether or not this
    #: service runs); a catalog's ``CatalogRole.database`` counts too.
    databases: tuple[str, ...] = ()
    #: Where it serves metrics (the observability output, the metrics store's scrape jobs).
    metrics: Metrics | None = None
    #: Stack outputs it contributes (output key -> value; a mapping is merged into the platform's output of
    #: that key), asked on every stack whether or not it is enabled (empty: nothing here), e.g. ``streams``.
    stack_outputs: Callable[[PlatformSpec], Mapping[str, Any]] | None = None
    #: Its runtime code (``<package>.runtime``), where the runtime's shared machinery loads it by a capability's
    #: contract: the ``SQL_ENGINE`` provider's ``statement`` and ``executor`` run the maintenance.
    runtime: str | None = None

    @property
    def display_name(self) -> str:
        """How messages name it to a person: its title, else its name."""
        return self.title or self.name

    def unavailable_on(self, target: Target) -> str | None:
        """Why its group says it cannot run on ``target`` (None: no such reason)."""
        return {Target.DOCKER: self.docker.unavailable, Target.NATIVE: self.native.unavailable,
                Target.AWS: self.aws.unavailable}[target]

    def runs_on(self, target: Target) -> bool:
        """Whether a target has a way to run this service (a renderer, a fold, its steps or a managed service)."""
        if self.unavailable_on(target) is not None:
            return False
        way = {Target.DOCKER: self.docker.container or self.steps,
               Target.NATIVE: self.native.process or self.native.folded or self.steps,
               Target.AWS: self.aws.task or self.aws.managed}[target]
        return way is not None

    def why_not_on(self, target: Target) -> str | None:
        """The reason this service cannot run on ``target``, or None when it can."""
        unavailable = self.unavailable_on(target)
        if unavailable is not None:
            return unavailable
        if not self.runs_on(target):
            return f"the {target.value} target has no way to run it"
        return None
