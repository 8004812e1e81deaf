"""The compute layer. The engines that plan scans, write files and commit."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Compute(LayerComponent):
    """The engines that plan scans, write files and commit."""

    LAYER = Layer.COMPUTE
