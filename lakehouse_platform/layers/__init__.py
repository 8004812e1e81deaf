"""The seven layer components, created first (``create_layers``), each the parent of its layer's resources."""

from __future__ import annotations

import pulumi

from lakehouse_platform.layers.base import LayerComponent, layer_labels
from lakehouse_platform.layers.catalog import Catalog
from lakehouse_platform.layers.compute import Compute
from lakehouse_platform.layers.governance import Governance
from lakehouse_platform.layers.observability import Observability
from lakehouse_platform.layers.orchestration import Orchestration
from lakehouse_platform.layers.recovery import Recovery
from lakehouse_platform.layers.storage import Storage
from lakehouse_platform.model import Layer, PlatformSpec

# The ownership table's order; the target decides the order resources are built in.
COMPONENTS: tuple[type[LayerComponent], ...] = (
    Storage, Catalog, Compute, Governance, Orchestration, Observability, Recovery,
)


def create_layers(spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None,
                  *, bare: bool = False) -> dict[Layer, LayerComponent]:
    """The seven layer components of a platform, before any resource exists (``bare``: ``LayerComponent``)."""
    return {cls.LAYER: cls(spec, opts, bare=bare) for cls in COMPONENTS}


__all__ = ["COMPONENTS", "Catalog", "Compute", "Governance", "LayerComponent", "Observability", "Orchestration",
           "Recovery", "Storage", "create_layers", "layer_labels"]
