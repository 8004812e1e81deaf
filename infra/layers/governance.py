"""The governance layer. Who may reach, read and write what: networks, identities, roles, keys."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Governance(LayerComponent):
    """Who may reach, read and write what: networks, identities, roles, keys."""

    LAYER = Layer.GOVERNANCE
