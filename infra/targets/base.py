"""What a deployment target provides to the layer components."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import pulumi

from infra.spec import PlatformSpec

if TYPE_CHECKING:
    from infra.layers.base import LayerComponent


class DeployTarget(ABC):
    """Builds the resources of each layer on one target (docker, aws or native)."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]]):
        self.spec = spec
        self.secrets = secrets

    @abstractmethod
    def build_layer(self, component: "LayerComponent", spec: PlatformSpec) -> dict[str, Any]:
        """Create the layer's resources with ``parent=component``; return what the layer exports."""

    def stack_outputs(self) -> dict[str, Any]:
        """Target-specific stack outputs (in addition to the common ones)."""
        return {}
