"""The recovery layer. Catalog backups, replicas and the practised way back."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Recovery(LayerComponent):
    """Catalog backups, replicas and the practised way back."""

    LAYER = Layer.RECOVERY
