"""The exporter on aws: a Fargate service reading as the reader identity, a Prometheus agent beside it."""

from __future__ import annotations

from infra.services.context import ServiceContext, Side
from infra.services.exporter.config import catalog_settings, exporter_config
from infra.services.exporter.container import IMAGE_CONFIG
from infra.services.plans import EcsPlan


def ecs(ctx: ServiceContext) -> EcsPlan:
    """On Fargate: the same image (pushed to the registry ``services.lakehouse-exporter.image`` names)."""
    config = exporter_config(ctx, Side.INTERNAL, "0.0.0.0", None, None)  # noqa: S104 - in its task
    return EcsPlan(env={"AWS_REGION": ctx.spec.aws.region, **catalog_settings(ctx.spec, Side.INTERNAL)[1]},
                   command=["python", "-m", "infra.operations.exporter", "--config", IMAGE_CONFIG],
                   files={IMAGE_CONFIG: config})
