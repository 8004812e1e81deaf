"""The catalog gate: bearer-token authentication and grants per namespace in front of the REST fixture (governance).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
