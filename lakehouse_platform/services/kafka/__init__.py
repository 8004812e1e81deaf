"""Kafka 4.3.1 in KRaft mode, one node (broker + controller): the platform's event log (compute, streams).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
