"""The catalog layer. Name -> current metadata pointer: the catalog services and their database."""

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer


class Catalog(LayerComponent):
    """Name -> current metadata pointer: the catalog services and their database."""

    LAYER = Layer.CATALOG
