"""The observability layer. Metadata tables turned into watched signals: logs, metrics, alarms."""

from typing import Any

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec


class Observability(LayerComponent):
    """Metadata tables turned into watched signals: logs, metrics, alarms."""

    LAYER = Layer.OBSERVABILITY

    def commitments(self, spec: PlatformSpec) -> dict[str, Any]:
        """When a table counts as stale, and where alarms go."""
        return {"observability": spec.observability.model_dump()}
