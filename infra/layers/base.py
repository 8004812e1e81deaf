"""The base of the seven layer components: a contract, an owner, and what the target builds for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import pulumi

from infra.labels import Ownership, labels
from infra.spec import Layer, PlatformSpec

if TYPE_CHECKING:
    from infra.targets.base import DeployTarget


def layer_labels(spec: PlatformSpec, layer: Layer, service: str | None = None) -> dict[str, str]:
    """Labels/tags every resource of a layer carries: platform, layer, owner (the rule of ``infra.labels``)."""
    ownership = Ownership(
        layer_owners={key.value: contract.owner for key, contract in spec.layers.items()},
        service_layers={name: svc.layer.value for name, svc in spec.services.items()},
        service_owners={name: svc.owner for name, svc in spec.services.items()},
    )
    owner = ownership.owner(layer.value, service)
    assert owner is not None, f"layer {layer.value} has no owner"
    return labels(spec.name, layer.value, owner, service)


class LayerComponent(pulumi.ComponentResource):
    """One layer of the platform. Subclasses only name their layer; the target builds its resources.

    Outputs: the layer's contract (owner, change control, promise, what down means) and whatever
    the target registered for it (service endpoints, bucket names, ...).
    """

    LAYER: ClassVar[Layer]

    def __init__(self, spec: PlatformSpec, target: "DeployTarget", opts: pulumi.ResourceOptions | None = None):
        super().__init__(f"platform:layers:{type(self).__name__}", f"{spec.name}-{self.LAYER.value}", None, opts)
        contract = spec.layers[self.LAYER]
        self.layer = self.LAYER
        self.owner = contract.owner
        self.services = sorted(spec.services_of(self.LAYER))
        built: dict[str, Any] = target.build_layer(self, spec)
        self.outputs: dict[str, Any] = {
            "layer": self.LAYER.value,
            "owner": contract.owner,
            "change_control": contract.change_control,
            "promise": contract.promise,
            "down_means": contract.down_means,
            "services": self.services,
            **self.commitments(spec),
            **built,
        }
        self.register_outputs(self.outputs)

    def commitments(self, spec: PlatformSpec) -> dict[str, Any]:
        """The figures behind the layer's promise (schedules, retention, freshness); none by default."""
        return {}
