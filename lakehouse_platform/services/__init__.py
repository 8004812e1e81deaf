"""The platform's services: one package each, holding the service's whole definition (``<package>/definition.py``).

The registry (``registry.registry()``) is what targets, the config loader, the profiles and the policy pack read;
``registry.MODULES`` lists the definitions. This package and every service package import nothing when imported:
a service's runtime code (``<package>/runtime.py``) runs where only the runtime's packages are installed.
"""
