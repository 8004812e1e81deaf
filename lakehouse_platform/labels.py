"""The labels every resource carries, and the rule that says who owns it.

One module the program (``lakehouse_platform.layers.base.layer_labels``) and the policy pack (``policies/``)
share, so the labels written and the labels checked cannot drift apart. Pure Python: it imports
neither ``pulumi`` nor ``pydantic`` (the pack and its tests import it without the program).

The owner rule
--------------
A resource's ``lakehouse.owner`` is the owner of the layer its ``lakehouse.layer`` names, or the
owner of a service *of that same layer* when the resource is that service's (an engine may have
its own team: trino's container, volume and task are trino's owner's). A resource of one layer made
for a service of another layer belongs to its own layer: the governance layer's task role and
secrets of a catalog are governance's, and their ``lakehouse.service`` label still says which
catalog they serve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

LABEL_PLATFORM = "lakehouse.platform"
LABEL_LAYER = "lakehouse.layer"
LABEL_OWNER = "lakehouse.owner"
LABEL_SERVICE = "lakehouse.service"
LABEL_KEYS: tuple[str, ...] = (LABEL_PLATFORM, LABEL_LAYER, LABEL_OWNER, LABEL_SERVICE)

# The seven layers, in the order of the ownership table (lakehouse_platform.model.Layer holds the same values).
LAYER_NAMES: tuple[str, ...] = (
    "storage", "catalog", "compute", "governance", "orchestration", "observability", "recovery",
)
#: The type token of the platform's component (``lakehouse_platform.component``), the parent of the layer components:
#: the program makes it, the policy pack knows it as the layers' root.
PLATFORM_TYPE = "platform:index:LakehousePlatform"


@dataclass(frozen=True)
class Ownership:
    """A stack's ownership table: each layer's owner, and each service's layer and owner.

    ``service_owners`` may hold a service's own owner only (``None``/absent: its layer's owner) or
    its resolved owner; the rule gives the same answer either way.
    """

    layer_owners: Mapping[str, str]
    service_layers: Mapping[str, str] = field(default_factory=dict)
    service_owners: Mapping[str, str | None] = field(default_factory=dict)

    def owner(self, layer: str | None, service: str | None = None) -> str | None:
        """The owner a resource of ``layer`` (made for ``service``, if any) must be labelled with."""
        if layer is None:
            return None
        if service and self.service_layers.get(service) == layer and self.service_owners.get(service):
            return self.service_owners[service]
        return self.layer_owners.get(layer)

    def whose(self, layer: str, service: str | None = None) -> str:
        """Whose owner ``owner`` answered with, for messages: ``service trino`` or ``layer governance``."""
        if service and self.service_layers.get(service) == layer and self.service_owners.get(service):
            return f"service {service}"
        return f"layer {layer}"


def labels(platform: str, layer: str, owner: str, service: str | None = None) -> dict[str, str]:
    """The labels/tags of one resource: platform, layer, owner, and the service it serves (if any)."""
    out = {LABEL_PLATFORM: platform, LABEL_LAYER: layer, LABEL_OWNER: owner}
    if service:
        out[LABEL_SERVICE] = service
    return out
