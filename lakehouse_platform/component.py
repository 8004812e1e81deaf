"""``LakehousePlatform``: the platform as a component a team instantiates in its own Pulumi program.

    import pulumi
    from lakehouse_platform.component import LakehousePlatform, platform_config

    analytics = LakehousePlatform("analytics", platform_config())
    pulumi.export("endpoints", analytics.endpoints)

``(name, args, opts)`` as Pulumi's components are: ``args`` is the typed model (``PlatformSpec``), read from the
stack's ``lakehouse:platform`` by ``platform_config`` for those who keep it there, or built in code. The name is the
platform's name (``PlatformSpec.name``, the prefix of every resource's name): a config that names the platform
otherwise is refused, one that names none takes the component's. Every resource is a child of one of the seven layer
components, themselves children of the platform; its outputs are attributes (``endpoints``, ``credentials``, ...)
and ``outputs`` holds them all by the stack outputs' names (``export`` makes them the stack's).

Order, and why: everything that can refuse the platform (config, secrets, artifacts, this host's ports, and the
other platforms of the program: two natively on one port or one state directory) is checked before the component
registers; and no platform of a program registers anything before the program's code has run to its end (the
program's gate, below), so a platform refused anywhere in the program leaves nothing deployed, the ones declared
before it included.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pulumi
from pulumi.runtime import settings

from lakehouse_platform import outputs as stack_outputs
from lakehouse_platform.config import NAMESPACE, ConfigError, extended, load_platform
from lakehouse_platform.labels import PLATFORM_TYPE
from lakehouse_platform.layers import LayerComponent, create_layers
from lakehouse_platform.model import Layer, PlatformSpec, Target
from lakehouse_platform.model.platform import PLATFORM_NAME
from lakehouse_platform.paths import stack_state_dir
from lakehouse_platform.resources import issue_certificates
from lakehouse_platform.services.resolver import CacheResolver, Resolver
from lakehouse_platform.services.secrets import resolve_secrets
from lakehouse_platform.targets import TargetNotReady, prepare
from lakehouse_platform.version import PLATFORM_VERSION

#: How the children are named: ``prefixed`` (each name starts with the platform's: several platforms share a stack)
#: or ``bare`` (the names and places 0.4.0 gave them, layers at the stack's root: a stack deployed by 0.4.0, or by a
#: fork of this repository, keeps every resource; one platform per stack).
ChildNames = Literal["prefixed", "bare"]


def platform_config(key: str = "platform", namespace: str = NAMESPACE) -> PlatformSpec:
    """The stack config's ``<namespace>:<key>`` (``lakehouse:platform``), over the stack file its
    ``<namespace>:extends`` names, validated; a bad config stops the run naming every bad key (no traceback)."""
    config = pulumi.Config(namespace)
    source = f"Pulumi.{pulumi.get_stack()}.yaml"
    try:
        return load_platform(extended(config.get_object(key), config.get("extends"), source=source), source=source)
    except ConfigError as exc:
        # A refusal of the program's: the platforms it declared before this config was read register nothing.
        raise _program().refuse(str(exc)) from None


@dataclass(frozen=True)
class Evaluation:
    """How a platform without its own ``resolver``/``check_ports`` finds artifacts and checks this host."""

    resolver: Resolver | None = None  # None: the artifact cache (``CacheResolver``), looked up, never filled
    check_ports: bool = True


_EVALUATION: contextvars.ContextVar[Evaluation | None] = contextvars.ContextVar("lakehouse_evaluation", default=None)


@contextlib.contextmanager
def evaluating(resolver: Resolver | None = None, check_ports: bool = True) -> Iterator[None]:
    """Platforms made in this block use ``resolver`` and ``check_ports``: a program evaluated under Pulumi mocks
    (unit tests: no artifact cache, the host's ports none of their business) or made on an engine by the lab's
    runner. ``pulumi up`` never needs it."""
    token = _EVALUATION.set(Evaluation(resolver, check_ports))
    try:
        yield
    finally:
        _EVALUATION.reset(token)


def evaluation() -> Evaluation:
    """How platforms are made here: ``evaluating``'s block, else the artifact cache and this host's ports."""
    return _EVALUATION.get() or Evaluation()


@dataclass(frozen=True)
class HostClaim:
    """What a platform holds on this host: its ports (port -> the config key giving it) and its state directory."""

    ports: dict[int, str]
    state_dir: Path | None


def host_claim(spec: PlatformSpec, stack: str) -> HostClaim:
    """Natively every port of every enabled service binds 127.0.0.1; the lab publishes its external ports; both keep
    data in the stack's state directory. The cloud holds nothing here."""
    if spec.target is Target.AWS:
        return HostClaim({}, None)
    ports: dict[int, str] = {}
    for name, service in spec.enabled_services().items():
        for port_name, port in service.ports.items():
            sides = (("internal", port.internal), ("external", port.external)) if spec.target is Target.NATIVE \
                else (("external", port.external),)
            for side, number in sides:
                if number is not None:
                    ports.setdefault(number, f"services.{name}.ports.{port_name}.{side}")
    return HostClaim(ports, stack_state_dir(stack, spec.state_dir))


def collisions(name: str, claim: HostClaim, other: str, held: HostClaim) -> list[str]:
    """Where platform ``name`` would take what platform ``other`` holds on this host, each naming the key to change."""
    ports = [f"port {port}: {key} of {name} is {other}'s {held.ports[port]}"
             for port, key in sorted(claim.ports.items()) if port in held.ports]
    found = ports[:5] + ([f"... and {len(ports) - 5} ports more"] if len(ports) > 5 else [])
    if ports:
        found.append(f"give {name} ports of its own (services.<service>.ports.<port>), or move the other platform's")
    if claim.state_dir is not None and claim.state_dir == held.state_dir:
        found.append(f"state_dir: {name} and {other} would both keep their data in {claim.state_dir}; set {name}'s "
                     "state_dir")
    return found


@dataclass
class _Program:
    """The platforms of one program run: what each holds on the host, and the gate all of them wait behind.

    The gate opens when the program's code has run to its end (the first turn of the event loop: registrations are
    queued until then, and Pulumi sends them once the code has returned or raised); a refusal closes it, and every
    registration of every platform fails with the refusal's message instead of reaching the engine.
    """

    gate: asyncio.Future[list[pulumi.Resource]]
    claims: dict[str, HostClaim] = field(default_factory=dict)
    bare: str | None = None  # the platform whose children keep bare names (one at most)
    refused: str | None = None

    def open(self) -> None:
        if not self.gate.done():
            if self.refused is None:
                self.gate.set_result([])
            else:
                self.gate.set_exception(pulumi.RunError(self.refused))
                self.gate.exception()  # retrieved here: the refusal is the program's error, said once

    def refuse(self, message: str) -> pulumi.RunError:
        self.refused = self.refused or message
        return pulumi.RunError(message)


_RUN: list[tuple[object, _Program]] = []  # the run's monitor (one per program run) and its platforms


def _program() -> _Program:
    monitor = settings.get_monitor()
    if not _RUN or _RUN[0][0] is not monitor:
        loop = asyncio.get_event_loop()
        program = _Program(gate=loop.create_future())
        loop.call_soon(program.open)
        _RUN[:] = [(monitor, program)]
    return _RUN[0][1]


def _named(name: str, args: PlatformSpec) -> PlatformSpec:
    """``args`` as the platform named ``name``: the component's name is the platform's."""
    if not PLATFORM_NAME.match(name):
        raise ValueError(f"{name!r} is not a platform name: lowercase letters, digits and -, 2 to 31 characters, "
                         "starting with a letter (it prefixes every resource's name)")
    if "name" in args.model_fields_set and args.name != name:
        raise ValueError(f"its config names the platform {args.name!r} (lakehouse:platform.name), the component "
                         f"{name!r}: the component's name is the platform's name; make them equal, or leave name out "
                         "of the config")
    return args if args.name == name else args.model_copy(update={"name": name})


def _gated(opts: pulumi.ResourceOptions | None, gate: pulumi.Output[Any]) -> pulumi.ResourceOptions:
    """A copy of ``opts`` with the program's gate among what the component waits for."""
    gated = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions())
    given = gated.depends_on
    gated.depends_on = gate if given is None else pulumi.Output.all(gate, given).apply(
        lambda values: list(values[1]) if isinstance(values[1], list | tuple) else [values[1]])
    return gated


class LakehousePlatform(pulumi.ComponentResource):
    """An Apache Iceberg lakehouse: seven layers with owners and contracts, on the target its args name.

    ``child_names``: ``ChildNames``. ``resolver``/``check_ports``: how artifacts are found and the host checked
    (default: ``evaluating``'s, else the artifact cache and this host's ports).
    """

    platform_version: str
    target: str
    spec: PlatformSpec
    layers: dict[Layer, LayerComponent]
    #: Every output, by the stack outputs' names (``export``).
    outputs: dict[str, Any]
    endpoints: pulumi.Output[dict[str, Any]]
    profiles: pulumi.Output[dict[str, Any]]
    ownership: pulumi.Output[dict[str, Any]]
    credentials: pulumi.Output[dict[str, Any]]
    version_manifest: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: PlatformSpec, opts: pulumi.ResourceOptions | None = None, *,
                 child_names: ChildNames = "prefixed", resolver: Resolver | None = None,
                 check_ports: bool | None = None) -> None:
        program = _program()
        try:
            spec = _named(name, args)
        except ValueError as exc:
            raise program.refuse(f"LakehousePlatform {name!r}: {exc}") from None
        host = evaluation()
        secrets = resolve_secrets(pulumi.Config(NAMESPACE), spec)
        try:
            target = prepare(spec, secrets, resolver or host.resolver or CacheResolver(),
                             check_ports=host.check_ports if check_ports is None else check_ports)
        except TargetNotReady as exc:
            raise program.refuse(str(exc)) from None
        self._claim(program, name, spec, child_names)
        super().__init__(PLATFORM_TYPE, name, None, _gated(opts, pulumi.Output.from_input(program.gate)))
        self.spec = spec
        bare = child_names == "bare"
        # A stack deployed by 0.4.0 has its layers at the stack's root: the alias carries each layer there, and
        # with it every child's URN (a child's aliases follow its parent's).
        layer_opts = pulumi.ResourceOptions(
            parent=self, aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)] if bare else None)
        self.layers = create_layers(spec, layer_opts, bare=bare)
        # Certificates come before any service: their PEMs join the secrets the target renders plans with
        # (the target holds this same dict).
        issued = issue_certificates(spec, self.layers[Layer.GOVERNANCE])
        secrets.update(issued.secrets)
        built = target.build(self.layers)
        for layer, component in self.layers.items():
            component.complete(built.layers.get(layer, {}))
        self.platform_version = PLATFORM_VERSION  # pyproject.toml's, on every target
        self.target = spec.target.value
        found: dict[str, Any] = {
            "platform_version": PLATFORM_VERSION,
            "target": spec.target.value,
            "platform": spec.name,
            # Which stack these outputs are, and whether it may be disturbed: the probes run their disruptive ones
            # only on a disposable stack, or when --disruptive names this stack.
            "stack": pulumi.get_stack(),
            "disposable": spec.disposable,
            "endpoints": stack_outputs.endpoints(spec),
            "version_manifest": spec.version_manifest(),
            "ownership": stack_outputs.ownership(spec),
            "tables": stack_outputs.tables(spec),
            "grants": stack_outputs.grants(spec),
            "recovery": stack_outputs.recovery(spec),
            "observability": stack_outputs.observability(spec),
            "profiles": stack_outputs.profiles(spec),
            "credentials": stack_outputs.credentials(secrets, spec),
            "certificates": pulumi.Output.from_input(issued.certificates),
            **stack_outputs.contributed(spec),  # what services add of their own (streams, ...)
            "layers": {layer.value: component.outputs for layer, component in self.layers.items()},
            **built.outputs,
        }
        self.outputs = found
        self.endpoints = pulumi.Output.from_input(found["endpoints"])
        self.profiles = pulumi.Output.from_input(found["profiles"])
        self.ownership = pulumi.Output.from_input(found["ownership"])
        self.credentials = pulumi.Output.from_input(found["credentials"])
        self.version_manifest = pulumi.Output.from_input(found["version_manifest"])
        self.register_outputs(found)

    @staticmethod
    def _claim(program: _Program, name: str, spec: PlatformSpec, child_names: ChildNames) -> None:
        """Refuse a second platform of the same name, a second one with bare names (their children would share
        URNs), or one that would take another's ports or state directory on this host; else record what it holds."""
        if name in program.claims:
            raise program.refuse(f"LakehousePlatform {name!r}: the program has a platform of that name already; "
                                 "give each platform a name of its own")
        if child_names == "bare" and program.bare is not None:
            raise program.refuse(f"LakehousePlatform {name!r}: child_names='bare' is {program.bare}'s already; one "
                                 "platform of a stack keeps bare names, the others' are prefixed (the default)")
        claim = host_claim(spec, pulumi.get_stack())
        problems = [line for other, held in program.claims.items() for line in collisions(name, claim, other, held)]
        if problems:
            raise program.refuse(f"LakehousePlatform {name!r} collides with another platform of this program on "
                                 "this host:\n" + "\n".join(f"  - {line}" for line in problems))
        program.claims[name] = claim
        if child_names == "bare":
            program.bare = name


def export(platform: LakehousePlatform) -> None:
    """Every output of ``platform`` as a stack output by its documented name: what a stack holding one platform
    exports (the probes, the commands and the review read these)."""
    for key, value in platform.outputs.items():
        pulumi.export(key, value)
