"""The labels every resource carries, and who owns a resource: one rule for the program and the pack.

Plain Python (no pulumi, no pydantic), so the policy pack imports it as it is.

The owner rule: a resource's owner label is the owner of the layer its layer label names, or the
owner of a service *of that same layer* when the resource is that service's. A resource of another
layer made for a service (a governance role for a catalog, a log group for Trino) is that other
layer's: its ``lakehouse.service`` label still says which service it serves.
"""

from __future__ import annotations

from collections.abc import Mapping

LABEL_PLATFORM = "lakehouse.platform"
LABEL_LAYER = "lakehouse.layer"
LABEL_OWNER = "lakehouse.owner"
LABEL_SERVICE = "lakehouse.service"

LAYER_NAMES: tuple[str, ...] = (
    "storage", "catalog", "compute", "governance", "orchestration", "observability", "recovery",
)
LAYER_COMPONENT_PREFIX = "platform:layers:"


def expected_owner(
    layer: str,
    layer_owners: Mapping[str, str],
    service: str | None = None,
    service_layer: str | None = None,
    service_owner: str | None = None,
) -> str:
    """The owner label of a resource of ``layer``, made for ``service`` (if any).

    ``service_layer``/``service_owner`` describe the service (its own layer, its own owner if it
    has one); only a service of the same layer with an owner of its own overrides the layer's owner.
    """
    if service is not None and service_layer == layer and service_owner:
        return service_owner
    return layer_owners[layer]


def resource_labels(
    platform: str,
    layer: str,
    layer_owners: Mapping[str, str],
    service: str | None = None,
    service_layer: str | None = None,
    service_owner: str | None = None,
) -> dict[str, str]:
    """Labels/tags of one resource: platform, layer, owner (by the rule above) and the service it serves."""
    labels = {
        LABEL_PLATFORM: platform,
        LABEL_LAYER: layer,
        LABEL_OWNER: expected_owner(layer, layer_owners, service, service_layer, service_owner),
    }
    if service is not None:
        labels[LABEL_SERVICE] = service
    return labels
