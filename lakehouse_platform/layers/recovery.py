"""The recovery layer. Catalog backups, replicas and the practised way back."""

from typing import Any

from lakehouse_platform.layers.base import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec


class Recovery(LayerComponent):
    """Catalog backups, replicas and the practised way back."""

    LAYER = Layer.RECOVERY

    def commitments(self, spec: PlatformSpec) -> dict[str, Any]:
        """The stated recovery point and time, and the catalog database's backup retention."""
        return {"recovery": spec.recovery.model_dump()}
