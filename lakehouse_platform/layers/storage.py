"""The storage layer. The bytes: the warehouse bucket or store, and what may delete from it."""

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer


class Storage(LayerComponent):
    """The bytes: the warehouse bucket or store, and what may delete from it."""

    LAYER = Layer.STORAGE
