"""The maintenance scheduler: the platform runs the spec's maintenance on its cron schedules (orchestration).

Maintenance is the platform's, never a pipeline's: this service runs each ``maintenance`` job of
the spec on its cron (APScheduler, ``lakehouse_platform/runtime/scheduler.py``), through Trino's Iceberg
procedures, one operation per table at a time, and records every run where the observability
layer reads it (``<state>/operations/runs.db``). On aws the same jobs are EventBridge Scheduler
schedules starting ECS tasks that run the same maintenance from the same image (``aws.py``).

Natively it is the project's own Python (``python -m lakehouse_platform.runtime scheduler``); in the lab, the
platform's one operations image (``lakehouse_platform/services/operations_support.py``): nothing is installed at start.
"""

from __future__ import annotations

from lakehouse_platform.model import Layer
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.capabilities import MAINTENANCE
from lakehouse_platform.services.definition import AwsPart, Lazy, OnAws, OnDocker, OnNative, ServiceDefinition
from lakehouse_platform.services.maintenance_scheduler import container, native
from lakehouse_platform.services.maintenance_scheduler.config import NAME, check

DEFAULT = {
    "layer": "orchestration",
    "role": "runs the spec's maintenance on its cron schedules through Trino, records every run",
    "version": support.APSCHEDULER_VERSION,
    "image": support.OPERATIONS_IMAGE,
    "ports": {"http": {"internal": 8790, "external": 8790}},  # host side: the probes read its /jobs
    "health": {"kind": "http", "port": "http", "path": "/healthz",
               "command": support.container_health_command(8790), "start_period_s": 300, "ready_timeout_s": 600},
    "memory": "256MiB",
    # Disk: its log (the run record is under <state>/operations).
    "disk": "128MiB",
    # No start-up dependency: a run finding Trino or the catalog down is recorded as failed and retried at
    # its next slot; natively it starts last anyway (declaration order), and on aws it is EventBridge.
}


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="cron maintenance through Trino (APScheduler), runs recorded",
        docker=OnDocker(container=container.server),
        native=OnNative(process=native.server),
        aws=OnAws(managed="EventBridge Scheduler: one schedule per maintenance job, each an ECS task running "
                          "the same Python maintenance from the operations image (maintenance_scheduler/aws.py)"),
        check=check, provides=(MAINTENANCE,),
    ),
)

AWS_PARTS = (
    AwsPart(name=NAME, layer=Layer.ORCHESTRATION,
            build=Lazy("lakehouse_platform.services.maintenance_scheduler.aws:build"),
            enabled=Lazy("lakehouse_platform.services.maintenance_scheduler.aws:enabled"),
            log_sources=Lazy("lakehouse_platform.services.maintenance_scheduler.aws:log_sources")),
)
