"""The maintenance scheduler: the platform runs the spec's maintenance on its cron schedules (orchestration).

Maintenance is the platform's, never a pipeline's: this service runs each ``maintenance`` job of
the spec on its cron (APScheduler, ``infra/operations/scheduler.py``), through Trino's Iceberg
procedures, one operation per table at a time, and records every run where the observability
layer reads it (``<state>/operations/runs.db``). On aws the same jobs are EventBridge Scheduler
schedules starting ECS tasks (``infra/targets/aws/orchestration.py``).

Natively it is the project's own Python (``python -m infra.operations scheduler``); in the lab, the
platform's one operations image (``infra/services/operations_support.py``): nothing is installed at start.
"""

from __future__ import annotations

from infra.operations.config import CONFIG_FILE, ENV_S3_ACCESS_KEY, ENV_S3_SECRET_KEY
from infra.services import operations_support as support
from infra.services.base import (
    ContainerHost,
    ContainerPlan,
    NativeHost,
    NativePlan,
    ServiceContext,
    ServiceDefinition,
    secret,
)
from infra.spec import Target

NAME = "maintenance-scheduler"
ROLE = "maintenance"

DEFAULT = {
    "layer": "orchestration",
    "role": "runs the spec's maintenance on its cron schedules through Trino, records every run",
    "version": support.APSCHEDULER_VERSION,
    "image": support.OPERATIONS_IMAGE,
    "ports": {"http": {"internal": 8790}},
    "health": {"kind": "http", "port": "http", "path": "/healthz",
               "command": support.container_health_command(8790), "start_period_s": 300, "ready_timeout_s": 600},
    "memory": "256MiB",
    # No start-up dependency: a run finding Trino or the catalog down is recorded as failed and retried at
    # its next slot; natively it starts last anyway (declaration order), and on aws it is EventBridge.
}


def native(ctx: ServiceContext, host: NativeHost) -> NativePlan:
    """``python -m infra.operations scheduler --role maintenance`` from the project, on loopback."""
    assert host.state_dir is not None and host.project_root is not None
    port = ctx.listen_port("http")
    config_path = host.home / CONFIG_FILE
    return NativePlan(
        argv=[host.python, "-m", "infra.operations", "scheduler", "--config", str(config_path), "--role", ROLE,
              "--listen", f"127.0.0.1:{port}"],
        env={"PYTHONPATH": str(host.project_root), "PYTHONUNBUFFERED": "1",
             ENV_S3_ACCESS_KEY: secret("s3-access-key"), ENV_S3_SECRET_KEY: secret("s3-secret-key"),
             **support.catalog_secret_env(ctx.spec)},
        files={str(config_path): support.native_config(ctx.spec, host).dump()},
        health={"kind": "http", "url": f"http://127.0.0.1:{port}/healthz", "expect_status": 200},
        stop_grace_s=60.0,  # SIGTERM waits for a running job to finish its commit
    )


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """The operations image running the scheduler's maintenance role."""
    port = ctx.listen_port("http")
    return support.container_plan(ctx, host, ROLE, port,
                                  env={ENV_S3_ACCESS_KEY: secret("s3-access-key"),
                                       ENV_S3_SECRET_KEY: secret("s3-secret-key"),
                                       **support.catalog_secret_env(ctx.spec)})


SERVICES = (
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="cron maintenance through Trino (APScheduler), runs recorded",
        container=container, native=native,
        managed={Target.AWS: "EventBridge Scheduler: one schedule per maintenance job, each an ECS task running "
                             "the Trino CLI (infra/targets/aws/orchestration.py)"},
    ),
)
