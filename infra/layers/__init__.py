"""The seven layer components, created first (``create_layers``), each the parent of its layer's resources."""

from __future__ import annotations

import pulumi

from infra.layers.base import LayerComponent, layer_labels
from infra.layers.catalog import Catalog
from infra.layers.compute import Compute
from infra.layers.governance import Governance
from infra.layers.observability import Observability
from infra.layers.orchestration import Orchestration
from infra.layers.recovery import Recovery
from infra.layers.storage import Storage
from infra.spec import Layer, PlatformSpec

# The ownership table's order; the target decides the order resources are built in.
COMPONENTS: tuple[type[LayerComponent], ...] = (
    Storage, Catalog, Compute, Governance, Orchestration, Observability, Recovery,
)


def create_layers(spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None) -> dict[Layer, LayerComponent]:
    """The seven layer components of a stack, before any resource exists."""
    return {cls.LAYER: cls(spec, opts) for cls in COMPONENTS}


__all__ = ["COMPONENTS", "Catalog", "Compute", "Governance", "LayerComponent", "Observability", "Orchestration",
           "Recovery", "Storage", "create_layers", "layer_labels"]
