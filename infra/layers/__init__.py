"""The seven layer components, in the order they are built.

Governance comes first because it creates what every other layer stands on (the network,
identities and keys); the ownership table keeps the chapter's order.
"""

from infra.layers.base import LayerComponent, layer_labels
from infra.layers.catalog import Catalog
from infra.layers.compute import Compute
from infra.layers.governance import Governance
from infra.layers.observability import Observability
from infra.layers.orchestration import Orchestration
from infra.layers.recovery import Recovery
from infra.layers.storage import Storage

BUILD_ORDER: tuple[type[LayerComponent], ...] = (
    Governance, Storage, Catalog, Compute, Orchestration, Observability, Recovery,
)

__all__ = ["BUILD_ORDER", "LayerComponent", "layer_labels", "Storage", "Catalog", "Compute", "Governance",
           "Orchestration", "Observability", "Recovery"]
