"""The storage layer. The bytes: the warehouse bucket or store, and what may delete from it."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Storage(LayerComponent):
    """The bytes: the warehouse bucket or store, and what may delete from it."""

    LAYER = Layer.STORAGE
