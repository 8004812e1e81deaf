"""Spark: the batch engine (compute). No process of the platform's on docker and native: Spark runs as a
client on the host, configured by the ``spark`` profile (the catalog, its cache setting, the store) with the
Iceberg runtime jars ``make artifacts`` fetches; on aws it is an EMR Serverless application with the same
spark-defaults (``aws.spark_emr_serverless``).
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services.definition import AwsPart, Lazy

SERVICES = ()  # a client on the host: no ServiceDefinition, nothing in the spec's services

AWS_PARTS = (
    AwsPart(name="spark", layer=Layer.COMPUTE, build=Lazy("lakehouse_platform.services.spark.aws:build"),
            enabled=lambda spec: spec.aws.spark_emr_serverless,
            log_sources=Lazy("lakehouse_platform.services.spark.aws:log_sources")),
)
