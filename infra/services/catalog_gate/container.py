"""The catalog gate on docker."""

from __future__ import annotations

from infra.services.catalog_gate.config import GATE_SOURCE, IMAGE_CONFIG, IMAGE_GATE, gate_config
from infra.services.context import ServiceContext
from infra.services.plans import ContainerHost, ContainerPlan


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(
        command=["python", IMAGE_GATE, "--config", IMAGE_CONFIG],
        uploads={IMAGE_CONFIG: gate_config(ctx, "0.0.0.0")},  # noqa: S104 - inside its container
        upload_sources={IMAGE_GATE: str(GATE_SOURCE)},
    )
