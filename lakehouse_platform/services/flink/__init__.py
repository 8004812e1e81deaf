"""Flink: the streaming writer, committing to Iceberg once per checkpoint (compute, streams).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
