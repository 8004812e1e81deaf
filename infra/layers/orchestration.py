"""The orchestration layer. When writes and maintenance run: the platform's maintenance schedule."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Orchestration(LayerComponent):
    """When writes and maintenance run: the platform's maintenance schedule."""

    LAYER = Layer.ORCHESTRATION
