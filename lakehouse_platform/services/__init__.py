"""The platform's services: one module each, holding the service's whole definition (see ``base``).

The registry (``registry()``) is what targets, the config loader, the profiles and the policy pack
read; ``registry.MODULES`` lists the modules.
"""

from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.definition import ServiceDefinition
from lakehouse_platform.services.registry import Registry, UnknownService, registry

__all__ = ["Registry", "ServiceContext", "ServiceDefinition", "Side", "UnknownService", "registry"]
