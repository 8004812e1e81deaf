"""The metrics exporter: the tables' metadata and the platform's own records turned into signals (observability).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
