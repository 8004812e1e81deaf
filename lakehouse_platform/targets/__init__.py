"""Deployment targets: one declaration, three places it runs.

A target is made in two steps. ``prepare`` checks everything that can be checked before a resource
exists (ports on this host: natively every port, in the lab the published ones; artifacts in the cache)
and raises ``TargetNotReady`` with every problem; ``build`` then registers every resource as a child of
its layer's component, in dependency order, and returns what each layer and the stack export.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulumi

from lakehouse_platform.layers import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec, Target
from lakehouse_platform.services.resolver import Resolver


class TargetNotReady(Exception):
    """The target cannot deploy this stack on this host; the message lists every reason."""


class UnbuiltDependency(Exception):
    """A resource would depend on something not built (yet): an ordering bug, never silently dropped."""


@dataclass
class Built:
    """What a target built: each layer's outputs and the target's own stack outputs."""

    layers: dict[Layer, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)

    def layer(self, layer: Layer) -> dict[str, Any]:
        return self.layers.setdefault(layer, {})


class DeployTarget(Protocol):
    """What the program asks of a target."""

    def build(self, layers: Mapping[Layer, LayerComponent]) -> Built: ...


def dependencies(resources: Mapping[str, pulumi.Resource], service: str,
                 depends_on: list[str]) -> list[pulumi.Resource]:
    """The built resources a service waits for; a name not built yet is an error."""
    missing = [name for name in depends_on if name not in resources]
    if missing:
        raise UnbuiltDependency(f"{service} depends on {', '.join(missing)}, which is not built yet "
                                "(services are built in PlatformSpec.start_order())")
    return [resources[name] for name in depends_on]


def prepare(spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]], resolver: Resolver,
            check_ports: bool = True) -> DeployTarget:
    """The stack's target, checked against this host. Provider packages are imported only for the chosen target.

    On docker and native the stack must own its state directory (``state_owner``): another stack's is refused here,
    before any resource. Like the ports, the host's state is not the unit tier's business (``check_ports=False``).
    """
    if check_ports and spec.target is not Target.AWS:
        from lakehouse_platform.paths import stack_state_dir
        from lakehouse_platform.targets import state_owner

        why = state_owner.refusal(stack_state_dir(pulumi.get_stack(), spec.state_dir), state_owner.program_identity())
        if why:
            raise TargetNotReady(why)
    if spec.target is Target.DOCKER:
        from lakehouse_platform.targets.docker import DockerTarget

        return DockerTarget(spec, secrets, resolver, check_ports=check_ports)
    if spec.target is Target.AWS:
        from lakehouse_platform.artifacts.artifact import ArtifactError
        from lakehouse_platform.targets.aws.target import AwsTarget

        try:
            artifacts = resolver.resolve(spec)  # what it uploads (MSK Connect's plugins), looked up in the cache
        except ArtifactError as exc:
            raise TargetNotReady(f"the aws platform cannot be built here:\n  - {exc}") from None
        return AwsTarget(spec, secrets, artifacts)
    from lakehouse_platform.targets.native.target import NativeTarget

    return NativeTarget(spec, secrets, resolver, check_ports=check_ports)
