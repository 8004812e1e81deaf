"""Spark: the batch engine (compute). No process of the platform's on docker and native: Spark runs as a
client on the host, configured by the ``spark`` profile (the catalog, its cache setting, the store) with the
Iceberg runtime jars ``make artifacts`` fetches; on aws it is an EMR Serverless application with the same
spark-defaults (``aws.spark_emr_serverless``).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
