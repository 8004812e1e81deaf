"""Typed model of the platform and its loader."""

from infra.spec.layers import DEFAULT_CONTRACTS, LAYER_NAMES, Layer
from infra.spec.loader import CONFIG_KEY, ConfigError, load_platform, load_stack
from infra.spec.model import LayerSpec, PlatformSpec, ServiceSpec, Target, parse_size

__all__ = [
    "CONFIG_KEY", "ConfigError", "DEFAULT_CONTRACTS", "LAYER_NAMES", "Layer", "LayerSpec", "PlatformSpec",
    "ServiceSpec", "Target", "load_platform", "load_stack", "parse_size",
]
