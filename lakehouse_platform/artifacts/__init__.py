"""What the native target runs (and the lab mounts), obtained from package registries into a verified cache.

Shared machinery lives here (``cache``, ``maven``, ``java``, ``gobuild``, ``apt``, ``archive``); each
service's own recipe lives in its service module. ``make artifacts`` runs ``python -m lakehouse_platform.artifacts``.
"""
