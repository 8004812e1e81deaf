"""The exporter on docker: the operations image as the operations' user, its config uploaded, the run record the
schedulers write mounted."""

from __future__ import annotations

from infra.services import operations_support as support
from infra.services.context import ServiceContext, Side
from infra.services.exporter.config import catalog_settings, exporter_config
from infra.services.plans import ContainerHost, ContainerPlan

IMAGE_CONFIG = "/etc/lakehouse/exporter.json"
IMAGE_OPERATIONS = "/var/lib/lakehouse/operations"  # the run record, mounted from the stack's state


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return support.operations_plan(
        command=["python", "-m", "infra.operations.exporter", "--config", IMAGE_CONFIG],
        env=catalog_settings(ctx.spec, Side.INTERNAL)[1],
        uploads={IMAGE_CONFIG: exporter_config(ctx, Side.INTERNAL, "0.0.0.0", None,  # noqa: S104 - in its container
                                               f"{IMAGE_OPERATIONS}/runs.db")},
        bind_mounts={"operations": IMAGE_OPERATIONS})
