"""The Pulumi program: validate the stack's config, check the target, create the seven layers, build, export.

Order, and why: everything that can refuse the stack (config, secrets, ports, artifacts) runs before
the first resource is registered, so a refused stack leaves nothing half-deployed; the seven layer
components come next; then the target builds every resource in dependency order under its layer.
"""

from __future__ import annotations

import pulumi

from lakehouse_platform import outputs
from lakehouse_platform.config import NAMESPACE, ConfigError, extended, load_platform
from lakehouse_platform.layers import LayerComponent, create_layers
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.resources import issue_certificates
from lakehouse_platform.services.resolver import CacheResolver, Resolver
from lakehouse_platform.services.secrets import resolve_secrets
from lakehouse_platform.targets import TargetNotReady, prepare
from lakehouse_platform.version import PLATFORM_VERSION


def load_spec() -> PlatformSpec:
    """The stack's validated spec; a config error stops the run before any resource exists."""
    config = pulumi.Config(NAMESPACE)
    source = f"Pulumi.{pulumi.get_stack()}.yaml"
    try:
        # A stack that extends another (lakehouse:extends) is that stack's platform with its own changes on top.
        return load_platform(extended(config.get_object("platform"), config.get("extends"), source=source),
                             source=source)
    except ConfigError as exc:
        # RunError: Pulumi prints the message alone, without a Python traceback.
        raise pulumi.RunError(str(exc)) from None


def main(resolver: Resolver | None = None, check_ports: bool = True) -> dict[str, LayerComponent]:
    """Build the platform and export what clients need. Returns the layer components (for tests).

    ``resolver`` finds what the native target runs and the lab mounts; the default only looks in
    the artifact cache. Tests pass their own, and ``check_ports=False`` (the host's ports are not
    the unit tier's business).
    """
    spec = load_spec()
    secrets = resolve_secrets(pulumi.Config(NAMESPACE), spec)
    try:
        target = prepare(spec, secrets, resolver or CacheResolver(), check_ports=check_ports)
    except TargetNotReady as exc:
        raise pulumi.RunError(str(exc)) from None
    layers = create_layers(spec)
    # Certificates come before any service: their PEMs join the secrets the target renders plans with
    # (the target holds this same dict).
    issued = issue_certificates(spec, layers[Layer.GOVERNANCE])
    secrets.update(issued.secrets)
    built = target.build(layers)
    for layer, component in layers.items():
        component.complete(built.layers.get(layer, {}))

    pulumi.export("platform_version", PLATFORM_VERSION)  # pyproject.toml's, on every target
    pulumi.export("target", spec.target.value)
    pulumi.export("platform", spec.name)
    # Which stack these outputs are, and whether it may be disturbed: the probes run their disruptive ones only on a
    # disposable stack, or when --disruptive names this stack.
    pulumi.export("stack", pulumi.get_stack())
    pulumi.export("disposable", spec.disposable)
    pulumi.export("endpoints", outputs.endpoints(spec))
    pulumi.export("version_manifest", spec.version_manifest())
    pulumi.export("ownership", outputs.ownership(spec))
    pulumi.export("tables", outputs.tables(spec))
    pulumi.export("grants", outputs.grants(spec))
    pulumi.export("recovery", outputs.recovery(spec))
    pulumi.export("observability", outputs.observability(spec))
    pulumi.export("profiles", outputs.profiles(spec))
    pulumi.export("credentials", outputs.credentials(secrets, spec))
    pulumi.export("certificates", pulumi.Output.from_input(issued.certificates))
    for key, value in outputs.contributed(spec).items():  # what services add of their own (streams, ...)
        pulumi.export(key, value)
    pulumi.export("layers", {layer.value: component.outputs for layer, component in layers.items()})
    for key, value in built.outputs.items():
        pulumi.export(key, value)
    return {layer.value: component for layer, component in layers.items()}
