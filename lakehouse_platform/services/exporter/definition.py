"""The metrics exporter: the tables' metadata and the platform's own records turned into signals (observability).

The process is the package ``lakehouse_platform/runtime/exporter/``; this module renders what it watches from the spec:
the default catalog as its own identity (``governance.exporter``, read-only: watching never writes), every
declared table with its freshness promise and retention, the stack's defaults for undeclared tables,
the run record the scheduler and on-demand operations write (``lakehouse_platform.runtime.runs``), and every
other service of the stack with its health check and, natively, its watchdog's status file.

Whole definition: defaults, the config, the local process (the project's Python, supervised like every
native service), the container (the platform's operations image, built from this repository), and the
ECS task (the same image, which the aws target builds and pushes to the stack's ECR repository:
``lakehouse_platform/targets/aws/images.py``).
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.capabilities import METRICS, SIGNALS
from lakehouse_platform.services.definition import AwsPart, Lazy, Metrics, OnAws, OnDocker, OnNative, ServiceDefinition
from lakehouse_platform.services.exporter import container, native
from lakehouse_platform.services.exporter.config import NAME
from lakehouse_platform.version import PLATFORM_VERSION

DEFAULT = {
    "layer": "observability",
    "role": "table and service signals from the Iceberg metadata and the platform's own records",
    "version": PLATFORM_VERSION,  # the project's own (pyproject.toml)
    "image": support.OPERATIONS_IMAGE,  # built from lakehouse_platform/runtime/image/Dockerfile
    "ports": {"http": {"internal": 9464, "external": 9464}},
    "health": {"kind": "http", "port": "http", "path": "/metrics",
               "command": ["CMD", "python", "-c", "import urllib.request; "
                           "urllib.request.urlopen('http://127.0.0.1:9464/metrics', timeout=3)"]},
    "memory": "384MiB",
    # Disk: its log.
    "disk": "128MiB",
}


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="table and service signals for Prometheus (reads as the reader)",
        docker=OnDocker(container=container.server),
        native=OnNative(process=native.server),
        aws=OnAws(task=Lazy("lakehouse_platform.services.exporter.aws:ecs")),
        metrics=Metrics("exporter"), provides=(SIGNALS,),
    ),
)



AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.OBSERVABILITY, build=Lazy("lakehouse_platform.services.exporter.aws:build"),
            cluster=True,
            enabled=lambda spec: NAME in spec.enabled_services(), after=(METRICS,),
            log_sources=Lazy("lakehouse_platform.services.exporter.aws:log_sources")),
)
