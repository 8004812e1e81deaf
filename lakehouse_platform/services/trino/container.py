"""Trino on docker: a single-node coordinator from the pinned image, its etc files uploaded."""

from __future__ import annotations

from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import ContainerHost, ContainerPlan
from lakehouse_platform.services.trino.config import IMAGE_ETC, etc_files, heap_bytes, secret_env


def server(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    port = ctx.listen_port("http")
    uploads = etc_files(ctx, IMAGE_ETC, "single", f"http://localhost:{port}", heap_bytes(ctx))
    return ContainerPlan(env=secret_env(ctx), uploads=uploads)
