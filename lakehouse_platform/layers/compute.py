"""The compute layer. The engines that plan scans, write files and commit."""

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer


class Compute(LayerComponent):
    """The engines that plan scans, write files and commit."""

    LAYER = Layer.COMPUTE
