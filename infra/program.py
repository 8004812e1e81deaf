"""The Pulumi program: validate the stack's platform config, build the seven layers, export outputs."""

from __future__ import annotations

import pulumi

from infra import outputs, profiles
from infra.layers import BUILD_ORDER
from infra.secrets_config import resolve_secrets
from infra.spec import ConfigError, PlatformSpec, load_platform
from infra.spec.loader import NAMESPACE
from infra.targets import make_target


def load_spec() -> PlatformSpec:
    """The stack's validated spec; a config error stops the run before any resource exists."""
    config = pulumi.Config(NAMESPACE)
    try:
        return load_platform(config.get_object("platform"), source=f"Pulumi.{pulumi.get_stack()}.yaml")
    except ConfigError as exc:
        # RunError: Pulumi prints the message alone, without a Python traceback.
        raise pulumi.RunError(str(exc)) from None


def main() -> dict:
    """Build the platform and export what clients need. Returns the layer components (for tests)."""
    spec = load_spec()
    secrets = resolve_secrets(pulumi.Config(NAMESPACE), spec)
    target = make_target(spec, secrets)
    layers = {}
    for layer_cls in BUILD_ORDER:
        layers[layer_cls.LAYER.value] = layer_cls(spec, target)

    pulumi.export("target", spec.target.value)
    pulumi.export("platform", spec.name)
    pulumi.export("endpoints", outputs.endpoints(spec))
    pulumi.export("version_manifest", spec.version_manifest())
    pulumi.export("ownership", outputs.ownership(spec))
    pulumi.export("profiles", profiles.all_profiles(spec))
    pulumi.export("credentials", outputs.credentials(secrets))
    pulumi.export("layers", {name: component.outputs for name, component in layers.items()})
    for key, value in target.stack_outputs().items():
        pulumi.export(key, value)
    return layers
