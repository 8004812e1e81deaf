"""Lakekeeper: production catalog two, in Rust, on PostgreSQL (catalog layer).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
