"""SeaweedFS: the S3-compatible object store holding every byte of table data (storage layer).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
