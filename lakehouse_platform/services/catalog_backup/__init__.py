"""Catalog backups on a schedule (recovery): the fixture's SQLite by online backup, the catalog databases by pg_dump.

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
