"""PostgreSQL: the catalogs' database and the bookshop's operational source (catalog layer).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
