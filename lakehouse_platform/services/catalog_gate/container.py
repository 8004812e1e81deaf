"""The catalog gate on docker: the platform's operations image running the gate's module, its config uploaded, its
signing key in its environment."""

from __future__ import annotations

from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.catalog_gate.config import GATE_MODULE, IMAGE_CONFIG, gate_config, signing_env
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return support.operations_plan(
        command=["python", "-m", GATE_MODULE, "--config", IMAGE_CONFIG], env=signing_env(),
        uploads={IMAGE_CONFIG: gate_config(ctx, "0.0.0.0")},  # noqa: S104 - inside its container
        bind_mounts={})
