"""Prometheus: scrapes the exporter and the catalog gate, evaluates the alert rules the spec declares (observability).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
