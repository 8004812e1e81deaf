"""Trino on aws: a coordinator and workers on ECS Fargate, the coordinator at trino.<name>.internal."""

from __future__ import annotations

from infra.services.context import ServiceContext
from infra.services.plans import EcsPlan
from infra.services.trino.config import IMAGE_ETC, NAME, etc_files, heap_bytes, secret_env

#: The image's launcher (the ECS task writes its files, then execs it).
IMAGE_LAUNCHER = "/usr/lib/trino/bin/run-trino"


def ecs(ctx: ServiceContext) -> EcsPlan:
    """The coordinator on Fargate: plans and schedules only (workers: ``ecs_worker``)."""
    port = ctx.listen_port("http")
    return EcsPlan(env={**secret_env(ctx), "AWS_REGION": ctx.spec.aws.region}, command=[IMAGE_LAUNCHER],
                   files=etc_files(ctx, IMAGE_ETC, "coordinator", f"http://localhost:{port}", heap_bytes(ctx)))


def ecs_worker(ctx: ServiceContext, memory_mib: int) -> EcsPlan:
    """A worker task of ``memory_mib`` (the stack's Fargate size), heap three quarters of it."""
    heap = memory_mib * 3 // 4 * 1024 * 1024
    files = etc_files(ctx, IMAGE_ETC, "worker", ctx.url(NAME, "http"), heap)
    return EcsPlan(env={**secret_env(ctx), "AWS_REGION": ctx.spec.aws.region}, command=[IMAGE_LAUNCHER],
                   files=files)
