"""The base of the seven layer components: a contract, an owner, and the outputs of what was built in it.

A layer component is created before anything else (``lakehouse_platform.component``: the platform's component is
its parent); the target then builds every resource as a child of its layer's component, in dependency order, naming
it with ``child_name``, and each component finally registers its outputs with ``complete``. Components never call
the target.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pulumi

from lakehouse_platform.labels import labels
from lakehouse_platform.model import Layer, PlatformSpec


def layer_labels(spec: PlatformSpec, layer: Layer, service: str | None = None) -> dict[str, str]:
    """Labels/tags of a resource of ``layer`` (made for ``service``, if any): the rule of ``labels``."""
    owner = spec.ownership().owner(layer.value, service)
    assert owner is not None, f"layer {layer.value} has no owner"
    return labels(spec.name, layer.value, owner, service)


class LayerComponent(pulumi.ComponentResource):
    """One layer of the platform. Subclasses name their layer and the figures behind its promise.

    ``bare``: its children keep the names 0.4.0 gave them (a service's own name, ``table-shop.orders``, ...), which
    only one platform of a stack can have; otherwise every child's name starts with the platform's name.
    """

    LAYER: ClassVar[Layer]

    def __init__(self, spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None, *, bare: bool = False):
        super().__init__(f"platform:layers:{type(self).__name__}", f"{spec.name}-{self.LAYER.value}", None, opts)
        self.prefix = "" if bare else f"{spec.name}-"
        contract = spec.layers[self.LAYER]
        self.layer = self.LAYER
        self.owner = contract.owner
        self.services = sorted(spec.services_of(self.LAYER))
        self.outputs: dict[str, Any] = {
            "layer": self.LAYER.value,
            "owner": contract.owner,
            "change_control": contract.change_control,
            "promise": contract.promise,
            "down_means": contract.down_means,
            "services": self.services,
            **self.commitments(spec),
        }

    def child_name(self, name: str) -> str:
        """The Pulumi name of a child resource called ``name``: the platform's name first (unless the name has it
        already, or the layer keeps bare names), so two platforms in one stack never share a URN."""
        return name if name.startswith(self.prefix) else f"{self.prefix}{name}"

    def commitments(self, spec: PlatformSpec) -> dict[str, Any]:
        """The figures behind the layer's promise (schedules, retention, freshness); none by default."""
        return {}

    def complete(self, built: dict[str, Any]) -> None:
        """Record what the target built in this layer and register the component's outputs."""
        self.outputs.update(built)
        self.register_outputs(self.outputs)
