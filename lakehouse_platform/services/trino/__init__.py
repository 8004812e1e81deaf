"""Trino: the distributed SQL engine in front of analysts, one catalog file per way to the tables (compute).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
