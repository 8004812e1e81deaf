"""Prometheus: scrapes the exporter and the catalog gate, evaluates the alert rules the spec declares (observability).

Whole definition: defaults, the scrape config and the rules file (``lakehouse_platform.services.prometheus.alerts``,
the same
text on every target), the local process (Debian's ``prometheus`` package, run as the platform's own
process bound to 127.0.0.1, its TSDB under the service's home; the package's own service is never
started), the container (the pinned ``prom/prometheus`` image). On aws the rules go to Amazon Managed
Service for Prometheus instead (``managed``; see ``aws.py`` in this package).
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services.capabilities import METRICS
from lakehouse_platform.services.definition import (
    ArtifactRecipe,
    AwsPart,
    Lazy,
    Metrics,
    OnAws,
    OnDocker,
    OnNative,
    ProbeHooks,
    ServiceDefinition,
)
from lakehouse_platform.services.prometheus import container, image, native
from lakehouse_platform.services.prometheus.artifact import artifact_key, fetch_prometheus
from lakehouse_platform.services.prometheus.config import NAME, stack_outputs
from lakehouse_platform.services.prometheus.smoke import OBSERVED

DEFAULT = {
    "layer": "observability",
    "role": "scrapes the exporter and the catalog gate, evaluates the alert rules declared from the spec",
    "version": "2.55.1",
    "native_version": "2.42.0",  # Debian bookworm's prometheus package
    "image": "prom/prometheus:v2.55.1",
    "ports": {"http": {"internal": 9090, "external": 9090}},
    "health": {"kind": "http", "port": "http", "path": "/-/ready",
               "command": ["CMD", "wget", "-qO-", "http://127.0.0.1:9090/-/ready"]},
    "memory": "256MiB",
    # Disk: its TSDB (observability.retention_size) and its WAL.
    "disk": "1GiB",
}


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="scrapes the exporter, evaluates the spec's alert rules",
        title="Prometheus",
        docker=OnDocker(image=image.IMAGE, container=container.server),
        native=OnNative(process=native.server,
                        artifact=ArtifactRecipe(key=artifact_key, fetch=fetch_prometheus,
                                                source="Debian apt (prometheus)")),
        aws=OnAws(managed="Amazon Managed Service for Prometheus (workspace, rule groups, alert manager to SNS)"),
        provides=(METRICS,), stack_outputs=stack_outputs,
        metrics=Metrics(OBSERVED, path="", scraped=False),  # the observability output: its UI and API
        probes=ProbeHooks(smoke=Lazy("lakehouse_platform.services.prometheus.smoke:smoke"),
                          version=Lazy("lakehouse_platform.services.prometheus.probe:version")),
    ),
)

AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.OBSERVABILITY, build=Lazy("lakehouse_platform.services.prometheus.aws:build"),
            enabled=Lazy("lakehouse_platform.services.prometheus.aws:enabled")),
)
