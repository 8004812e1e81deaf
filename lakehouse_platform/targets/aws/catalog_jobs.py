"""The catalogs' setup jobs on aws: one-off ECS tasks that ``pulumi up`` runs in order (``bootstrap``: each an
``EcsTaskRun``), so what needs the catalog (declared tables, the Flink application, the connectors) waits for them.

The jobs' task definitions are each catalog part's ``catalog_jobs``; they are also the ``catalog_jobs`` stack output
(``run_spec``), in the order they run (the database's init first, then each catalog's jobs in start order), each
with the ``aws ecs run-task`` line that runs it again by hand (the jobs are idempotent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.ecs import run_task_command
from lakehouse_platform.components.aws.run_task import EcsTaskRun
from lakehouse_platform.model import Layer
from lakehouse_platform.services.aws_parts import Foundation, PartComponent

LAYER = Layer.CATALOG


def ordered(foundation: Foundation, parts: Sequence[PartComponent]) -> dict[str, aws.ecs.TaskDefinition]:
    """The parts' catalog jobs in the order they run: the jobs a part says come first (the database's init), then
    the start order."""
    tasks = {job: task for part in parts for job, task in part.catalog_jobs.items()}
    order = [job for part in parts for job in part.first_jobs if job in tasks]
    order += [n for n in foundation.spec.start_order() if n in tasks and n not in order]
    return {job: tasks[job] for job in order}


def run_spec(foundation: Foundation, parts: Sequence[PartComponent]) -> dict[str, dict[str, Any]]:
    """The ``catalog_jobs`` output: each job in the order it runs, with the ``aws ecs run-task`` line that runs it."""
    cluster = foundation.cluster(LAYER)
    network = foundation.gov.network
    return {
        job: {
            "order": index,
            "cluster": cluster.name,
            "task_definition": task.arn,
            "subnets": network.private_subnet_ids,
            "security_groups": [network.sg("catalogs").id],
            "command": run_task_command(cluster.name, task.arn, network.private_subnet_ids,
                                        [network.sg("catalogs").id]),
        }
        for index, (job, task) in enumerate(ordered(foundation, parts).items())
    }


def bootstrap(foundation: Foundation, parts: Sequence[PartComponent]) -> list[pulumi.Resource]:
    """The catalog jobs run by ``pulumi up`` itself, one after the other, after the catalog servers: what needs the
    catalog depends on them (``Foundation.catalog_ready``). A job runs again when its task definition changes (a new
    revision: its image, its secrets, an identity's grants it renders)."""
    spec, ctx = foundation.spec, foundation.ctx
    network = foundation.gov.network
    waits: list[pulumi.Resource] = [part for part in parts if part.layer is LAYER]
    runs: list[pulumi.Resource] = []
    for job, task in ordered(foundation, parts).items():
        run = EcsTaskRun(
            f"{spec.name}-{job}-run", description=f"catalog job {job}", cluster=foundation.cluster(LAYER).arn,
            task_definition=task.arn, subnets=network.private_subnet_ids,
            security_groups=[network.sg("catalogs").id], region=spec.aws.region, trigger=job,
            log_group=foundation.logs.names.get(job), tags=ctx.tags(LAYER, job, **{"lakehouse.kind": "job"}),
            opts=ctx.opts(LAYER, depends_on=[*waits, *runs[-1:]]))
        runs.append(run)
    return runs
