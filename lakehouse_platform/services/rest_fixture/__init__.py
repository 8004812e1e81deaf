"""The Apache Iceberg REST fixture: the reference catalog, on file-backed SQLite or PostgreSQL (catalog layer).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
