"""The catalog gate on docker: the platform's operations image, its config uploaded, its signing key in its
environment."""

from __future__ import annotations

from infra.services.catalog_gate.config import GATE_MODULE, IMAGE_CONFIG, gate_config, signing_env
from infra.services.context import ServiceContext
from infra.services.plans import ContainerHost, ContainerPlan

#: Dockerfile of the platform's operations image (the exporter's too).
OPERATIONS_DOCKERFILE = "docker/operations.Dockerfile"


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(
        command=["python", "-m", GATE_MODULE, "--config", IMAGE_CONFIG],
        env=signing_env(),
        uploads={IMAGE_CONFIG: gate_config(ctx, "0.0.0.0")},  # noqa: S104 - inside its container
        build_dockerfile=OPERATIONS_DOCKERFILE,
    )
