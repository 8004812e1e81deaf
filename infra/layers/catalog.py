"""The catalog layer. Name -> current metadata pointer: the catalog services and their database."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Catalog(LayerComponent):
    """Name -> current metadata pointer: the catalog services and their database."""

    LAYER = Layer.CATALOG
