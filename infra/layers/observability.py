"""The observability layer. Metadata tables turned into watched signals: logs, metrics, alarms."""

from infra.layers.base import LayerComponent
from infra.spec import Layer


class Observability(LayerComponent):
    """Metadata tables turned into watched signals: logs, metrics, alarms."""

    LAYER = Layer.OBSERVABILITY
