"""Apache Polaris: production catalog one, on PostgreSQL, OAuth2 and credential vending (catalog layer).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
