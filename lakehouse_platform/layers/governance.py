"""The governance layer. Who may reach, read and write what: networks, identities, roles, keys."""

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer


class Governance(LayerComponent):
    """Who may reach, read and write what: networks, identities, roles, keys."""

    LAYER = Layer.GOVERNANCE
