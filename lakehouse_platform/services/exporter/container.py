"""The exporter on docker: the operations image as the operations' user, its config uploaded, the run record the
schedulers write mounted."""

from __future__ import annotations

from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.exporter.config import exporter_config, secret_env
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan

IMAGE_CONFIG = "/etc/lakehouse/exporter.json"
IMAGE_OPERATIONS = "/var/lib/lakehouse/operations"  # the run record, mounted from the stack's state


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return support.operations_plan(
        command=["python", "-m", "lakehouse_platform.runtime.exporter", "--config", IMAGE_CONFIG],
        env=secret_env(ctx.spec, Side.INTERNAL),
        uploads={IMAGE_CONFIG: exporter_config(ctx, Side.INTERNAL, "0.0.0.0", None,  # noqa: S104 - in its container
                                               f"{IMAGE_OPERATIONS}/runs.db")},
        bind_mounts={"operations": IMAGE_OPERATIONS})
