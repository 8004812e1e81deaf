"""Kafka Connect (distributed worker) with Debezium's PostgreSQL source and the Iceberg sink (compute, streams).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
