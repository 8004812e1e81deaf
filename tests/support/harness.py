"""Runs a Pulumi program under Pulumi mocks and records every resource it registers.

The program is this repository's ``__main__.py`` (or a team's, ``examples/team-project``), run as ``pulumi up`` runs
it. Mocks stand in for the docker and aws providers only (no engine, no account here); the program, the component,
the spec, the layers and the targets run for real. What the native target runs and the lab mounts comes from
``FakeResolver`` (fixed paths, nothing looked up), and host ports are not checked (``component.evaluating``), so
the unit tier needs no artifact cache, no network and no free ports.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.settings import SETTINGS

from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.artifacts.clients import DuckDBExtensions
from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.policies import wire
from lakehouse_platform.services.resolver import cloud_recipes, host_clients_apply, java_majors, recipe_of
from tests.support import REPO_ROOT

FAKE_CACHE = Path("/nonexistent/lakehouse-cache")
#: This repository's own program (what ``make up`` deploys).
REPO_PROGRAM = REPO_ROOT / "__main__.py"


def fake_artifact(name: str) -> Artifact:
    """An artifact at a fixed path under a cache that does not exist (the program never reads it)."""
    path = FAKE_CACHE / name
    return Artifact(name=name, requested="test", version="test", path=path, size_bytes=0, sha256="0" * 64,
                    classpath=(path / "a.jar", path / "b.jar"), main_class=f"fake.{name.replace('-', '_')}.Main")


class FakeResolver:
    """Resolves every artifact a stack needs to a fixed fake path: the unit tier's resolver."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def resolve(self, spec: PlatformSpec) -> StackArtifacts:
        services = {name: fake_artifact(name) for name in spec.enabled_services() if recipe_of(spec, name)}
        self.asked += list(services)
        native = host_clients_apply(spec)  # the clients on this host: natively and in the lab
        return StackArtifacts(
            services=services,
            java={major: Path(f"/usr/lib/jvm/fake-{major}") for major in java_majors(spec)},
            spark_jars=fake_artifact("spark-jars") if native else None,
            duckdb=DuckDBExtensions("1.4.4", {n: FAKE_CACHE / "duckdb" / "v1.4.4" / "linux_amd64" / f"{n}.duckdb_extension"
                                              for n in ("httpfs", "avro", "iceberg")}) if native else None,
            cloud={name: fake_artifact(f"cloud-{name}") for name in cloud_recipes(spec)},
            runtime=fake_artifact("operations-runtime") if spec.target is Target.NATIVE else None,
        )

CLOUD_SECRETS = {
    "lakehouse:polarisRootSecret": "test-polaris-root-secret",
    "lakehouse:polarisTokenKey": "test-polaris-token-signing-key",
    "lakehouse:trinoSharedSecret": "test-trino-shared-secret",
    "lakehouse:trinoPasswordPlatform": "test-trino-password-platform",
    "lakehouse:trinoPasswordWriter": "test-trino-password-writer",
    "lakehouse:trinoPasswordReader": "test-trino-password-reader",
    "lakehouse:polarisClientSecretPlatform": "test-polaris-client-secret-platform",
    "lakehouse:polarisClientSecretWriter": "test-polaris-client-secret-writer",
    "lakehouse:polarisClientSecretReader": "test-polaris-client-secret-reader",
}
SECRET_KEY = wire.SIG_KEY  # the key Pulumi's wire format puts next to SECRET_SIG
SECRET_SIG = wire.SECRET_SIG  # Pulumi's wire signature of a secret value


@dataclass
class Registered:
    """One resource the program registered: type token, name, inputs and parent."""

    type: str
    name: str
    inputs: dict[str, Any]
    urn: str
    parent: str | None = None
    parent_type: str | None = None
    delete_before_replace: bool = False
    depends_on: list[str] = field(default_factory=list)


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource; a job container reports what the provider reads back once it stopped.

    ``job_results`` sets a job's (exit code, logs) as pulumi-docker would record them (``exit_code``,
    ``container_logs``); every other job exits 0.
    """

    resources: list[Registered] = field(default_factory=list)
    job_results: dict[str, tuple[int | None, str]] = field(default_factory=dict)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        urn = f"urn:pulumi:test::lakehouse-platform::{args.typ}::{args.name}"
        parent = getattr(args, "parent", None) or None
        self.resources.append(Registered(args.typ, args.name, dict(args.inputs), urn, parent))
        outputs = dict(args.inputs)
        if args.typ == "docker:index/remoteImage:RemoteImage":
            outputs["imageId"] = f"sha256:{args.name}"
        if args.typ == "docker:index/container:Container" and args.inputs.get("attach"):
            code, logs = self.job_results.get(args.name, (0, f"{args.name}: done\n"))
            outputs.update({"exitCode": code, "containerLogs": logs})
        if args.typ.startswith("aws:"):
            outputs = {**aws_computed_outputs(args.typ, args.name), **outputs}
        if args.typ == "aws:ecr/repository:Repository":
            outputs["repositoryUrl"] = f"{ECR_REGISTRY}/{args.inputs.get('name') or args.name}"
        if args.typ.endswith(":PushedImage"):  # what the registry answers the push with
            outputs.update(pushed_image_outputs(args.inputs))
        if args.typ.endswith(":SelfSignedCertificate"):  # what the provider issues on create
            cert, key = f"-----BEGIN CERTIFICATE-----\n{args.name}\n", f"-----BEGIN PRIVATE KEY-----\n{args.name}\n"
            outputs.update(cert_pem=cert, key_pem=key, pem=key + cert, not_after="2099-01-01T00:00:00+00:00")
        return f"{args.name}-id", outputs

    # Pulumi takes a plain dict as well as (result, failures) (runtime/mocks.py: isinstance(tup, dict)).
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": "123456789012", "arn": "arn:aws:iam::123456789012:user/test", "userId": "test"}
        if args.token == "aws:index/getRegion:getRegion":
            return {"name": "eu-west-1", "region": "eu-west-1", "id": "eu-west-1"}
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com"}
        if args.token == "aws:ecr/getAuthorizationToken:getAuthorizationToken":
            return {"authorizationToken": "QVdTOnRlc3QtZWNyLXBhc3N3b3Jk", "userName": "AWS",
                    "password": "test-ecr-password", "proxyEndpoint": f"https://{ECR_REGISTRY}",
                    "expiresAt": "2099-01-01T00:00:00Z", "registryId": ACCOUNT}
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            return {"names": ["eu-west-1a", "eu-west-1b", "eu-west-1c"], "zoneIds": ["a", "b", "c"]}
        return {}


ACCOUNT = "123456789012"
ECR_REGISTRY = f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com"


def pushed_image_outputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """A pushed image's digest as a registry would answer (derived from the context: stable per context)."""
    digest = "sha256:" + hashlib.sha256(f"{inputs['repository']}\0{inputs['context_digest']}".encode()).hexdigest()
    return {"digest": digest, "reference": f"{inputs['repository']}@{digest}", "pushed": True}


def aws_computed_outputs(typ: str, name: str) -> dict[str, Any]:
    """What AWS computes for a resource and the program reads back (ARNs, endpoints, managed secrets)."""
    service = typ.split(":")[1].split("/")[0]
    computed: dict[str, Any] = {"arn": f"arn:aws:{service}:eu-west-1:{ACCOUNT}:{name}"}
    if typ == "aws:rds/instance:Instance":
        address = f"{name}.abc123.eu-west-1.rds.amazonaws.com"
        computed.update({
            "address": address, "endpoint": f"{address}:5432", "port": 5432,
            "masterUserSecrets": [{"secretArn": f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:rds!db-{name}-AbCdEf",
                                   "secretStatus": "active"}],
        })
    elif typ == "aws:secretsmanager/secret:Secret":
        computed["arn"] = f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:{name}-AbCdEf"  # names get 6 characters
    elif typ == "aws:lb/loadBalancer:LoadBalancer":
        computed.update({"dnsName": f"internal-{name}.eu-west-1.elb.amazonaws.com", "arnSuffix": f"app/{name}/abc"})
    elif typ == "aws:lb/targetGroup:TargetGroup":
        computed["arnSuffix"] = f"targetgroup/{name}/abc"
    elif typ == "aws:kms/key:Key":
        computed["keyId"] = f"{name}-key-id"
    elif typ == "aws:msk/cluster:Cluster":
        computed["bootstrapBrokersSaslIam"] = f"b-1.{name}.kafka.eu-west-1.amazonaws.com:9098"
    elif typ in ("aws:mskconnect/customPlugin:CustomPlugin", "aws:mskconnect/workerConfiguration:WorkerConfiguration"):
        computed["latestRevision"] = 1
    elif typ == "aws:ecr/repository:Repository":
        computed["registryId"] = ACCOUNT
    elif typ == "aws:sqs/queue:Queue":
        computed["url"] = f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/{name}"
    return computed


@dataclass(frozen=True)
class Registration:
    """One registration as the engine sees it: its URN in Pulumi's own format (the parent's whole qualified type,
    which the mock monitor shortens to the last one), its parent's, and its alias specs (``alias_pb2.Alias``)."""

    urn: str
    parent: str
    type: str
    name: str
    aliases: tuple[Any, ...]


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock monitor, recording each registration (``Registration``) in order."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self._real: dict[str, str] = {}  # the mock's URN -> Pulumi's

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            parent = self._real.get(request.parent, "")
            qualified = f"{parent.split('::')[2]}${request.type}" if parent else request.type
            urn = "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), qualified, request.name])
            self._real[response.urn] = urn
            self.registrations.append(Registration(urn, parent, request.type, request.name, tuple(request.aliases)))
        return response


@dataclass
class ProgramRun:
    """The outcome of one program run under mocks."""

    resources: list[Registered]
    outputs: dict[str, Any]
    layers: dict[str, Any]
    registrations: list[Registration] = field(default_factory=list)
    platforms: dict[str, Any] = field(default_factory=dict)  # the program's LakehousePlatform instances by name

    def of_type(self, token: str) -> list[Registered]:
        return [r for r in self.resources if r.type == token]

    def parent_of(self, resource: Registered) -> Registered | None:
        """The resource's parent (a layer or another component), if it has one."""
        for candidate in self.resources:
            if candidate.name == resource.parent and candidate.type == resource.parent_type:
                return candidate
        return None

    def layer_of(self, resource: Registered) -> str | None:
        """The name of the layer component the resource sits under, through any components between."""
        node: Registered | None = resource
        while node is not None and node.parent is not None:
            if (node.parent_type or "").startswith("platform:layers:"):
                return node.parent
            node = self.parent_of(node)
        return None

    def named(self, name: str) -> Registered:
        matches = [r for r in self.resources if r.name == name]
        assert len(matches) == 1, f"expected one resource named {name!r}, found {len(matches)}"
        return matches[0]


def run_program(
    stack: str,
    platform: dict[str, Any],
    extra_config: dict[str, str] | None = None,
    mocks: RecordingMocks | None = None,
    resolver: Any = None,
    secret_keys: list[str] | None = None,
    check_ports: bool = False,
    program: Path = REPO_PROGRAM,
    project: str = "lakehouse-platform",
) -> ProgramRun:
    """Evaluate a Pulumi program for ``stack`` with the given ``lakehouse:platform`` object: this repository's
    ``__main__.py`` (``program``: another program file, a team's), as ``pulumi up`` runs it.

    ``extra_config`` keys are secret (as `pulumi config set --secret` makes them) unless ``secret_keys`` names
    which are. ``check_ports``: the native target checks this host's ports and the data on it (``in_place``), as
    ``pulumi up`` does (the unit tier's runs skip both; a test of those checks sets it).
    """
    from lakehouse_platform import component

    mocks = mocks if mocks is not None else RecordingMocks()
    if extra_config is None and platform.get("target") == "aws":
        extra_config = CLOUD_SECRETS  # what `pulumi config set --secret` puts in a cloud stack
    config = {"lakehouse:platform": json.dumps(platform), **(extra_config or {})}
    pulumi.runtime.set_all_config(config, secret_keys if secret_keys is not None else list((extra_config or {}).keys()))
    monitor = RecordingMonitor(mocks)
    pulumi_mocks.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    SETTINGS.outputs.clear()  # a stopped run's outputs (their tasks in its own loop) are not this run's to wait for
    exported: dict[str, Any] = {}
    original_export = pulumi.export

    def capture(name: str, value: Any) -> None:
        exported[name] = value
        original_export(name, value)

    parents: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    depends: dict[tuple[str, str], list[str]] = {}
    replaced_first: set[tuple[str, str]] = set()

    platforms: dict[str, Any] = {}

    def record_options(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if isinstance(args.resource, component.LakehousePlatform):
            platforms[args.name] = args.resource
        parent = args.opts.parent if args.opts else None
        parents[(args.type_, args.name)] = ((getattr(parent, "_name", None), getattr(parent, "_type", None))
                                            if parent is not None else (None, None))
        on = (args.opts.depends_on if args.opts else None) or []
        # (The platform's depends_on is the program's gate, an Output: no resource of the program.)
        depends[(args.type_, args.name)] = [r._name for r in (on if isinstance(on, list) else [on])
                                            if isinstance(r, pulumi.Resource)]
        if args.opts is not None and args.opts.delete_before_replace:
            replaced_first.add((args.type_, args.name))
        return None

    def body() -> None:
        # An in-process transformation sees each resource's options, so parents and edges can be asserted.
        pulumi.runtime.register_stack_transformation(record_options)
        with component.evaluating(resolver=resolver or FakeResolver(), check_ports=check_ports):
            runpy.run_path(str(program), run_name="__main__")

    pulumi.export = capture
    try:
        from pulumi.runtime.sync_await import _sync_await

        try:
            _sync_await(_run_until_quiet(body))
        except BaseException:
            # A run the program stopped (a refusal) leaves its pending registrations and outputs in the event loop:
            # the runs after it get a loop of their own, as the lab's runner and pulumi's own ``mocks.test`` do.
            asyncio.set_event_loop(asyncio.new_event_loop())
            raise
    finally:
        pulumi.export = original_export
    for resource in mocks.resources:
        resource.parent, resource.parent_type = parents.get((resource.type, resource.name), (None, None))
        resource.depends_on = depends.get((resource.type, resource.name), [])
        resource.delete_before_replace = (resource.type, resource.name) in replaced_first
    resolved = {k: _resolve(v) for k, v in exported.items()}
    layers = ({layer.value: c for layer, c in next(iter(platforms.values())).layers.items()}
              if len(platforms) == 1 else {})
    return ProgramRun(mocks.resources, resolved, layers, monitor.registrations, platforms)


async def _run_until_quiet(body: Any) -> None:
    """Run the program, then wait until every RPC and every output it started has finished.

    What Pulumi's ``run_pulumi_func`` does for a program, without its wait for one output at a time
    (``asyncio.wait(FIRST_COMPLETED)`` over every pending output, once per finished one: quadratic in the outputs, a
    third of a cloud stack's evaluation): each round awaits every pending RPC, then every pending output together.
    A run that fails lets what it started finish first (errors dropped), so nothing of it reaches the next run.
    """
    import asyncio

    from pulumi.runtime.settings import SETTINGS, _get_rpc_manager

    rpcs = _get_rpc_manager()
    # A failed run leaves tasks whose exceptions nobody retrieves; asyncio reports each when the task is collected,
    # formatting its traceback, which on CPython 3.11 parses source lines (ast): a collection that lands inside
    # another ast.parse breaks it ("AST constructor recursion depth mismatch"). The run's failure is its exception.
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)

    def take() -> list[Any]:
        with SETTINGS.lock:
            pending = [*SETTINGS.outputs, *rpcs.rpcs]
            SETTINGS.outputs.clear()
            rpcs.rpcs.clear()
        return pending

    try:
        body()
        while pending := take():
            await asyncio.gather(*pending)
            if rpcs.unhandled_exception is not None:
                raise rpcs.unhandled_exception.with_traceback(rpcs.exception_traceback)
    except BaseException:
        while rest := take():
            await asyncio.gather(*rest, return_exceptions=True)
        raise


def _resolve(value: Any) -> Any:
    """Plain value of an export; secret Outputs become {'secret': True, 'value': ...}."""
    if isinstance(value, pulumi.Output):
        from pulumi.runtime.sync_await import _sync_await

        is_secret = _sync_await(value.is_secret())
        plain = _sync_await(value.future())
        return {"secret": True, "value": plain} if is_secret else plain
    return value


_RUNS: dict[str, ProgramRun] = {}


def cached_run(stack: str, platform: dict[str, Any]) -> ProgramRun:
    """``run_program`` once per (stack, config) in a test session: the aws graph takes seconds to build.

    Callers only read the result (policies tests deep-copy what they mutate).
    """
    key = json.dumps([stack, platform], sort_keys=True)
    if key not in _RUNS:
        _RUNS[key] = run_program(stack, platform)
    return _RUNS[key]
