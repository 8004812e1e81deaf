"""The orchestration layer. When writes and maintenance run: the platform's maintenance schedule."""

from typing import Any

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec


class Orchestration(LayerComponent):
    """When writes and maintenance run: the platform's maintenance schedule."""

    LAYER = Layer.ORCHESTRATION

    def commitments(self, spec: PlatformSpec) -> dict[str, Any]:
        """The maintenance the platform schedules (its owner runs it; pipelines are their owners')."""
        return {"maintenance": [job.model_dump() for job in spec.maintenance]}
