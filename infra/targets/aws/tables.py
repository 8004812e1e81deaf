"""Declared tables on aws (tables as code, orchestration): created and evolved through Trino by a one-off ECS task.

The catalogs and Trino are private, so the deploying machine cannot reach them: the same declaration as
on docker and native becomes idempotent Trino statements (``tables.trino_statements``), run by the Trino CLI
in a task inside the VPC as a deployment step (``EcsTaskRun``) whenever the declarations change.
"""

from __future__ import annotations

import hashlib
import json
import shlex

import pulumi

from infra.operations import tables as declared_tables
from infra.services import registry
from infra.services.context import Side, url
from infra.spec import Layer, PlatformSpec
from infra.targets.aws import governance as gov_module
from infra.targets.aws.ecs import Container, shell, task_definition
from infra.targets.aws.foundation import Foundation
from infra.targets.aws.run_task import EcsTaskRun

LAYER = Layer.ORCHESTRATION
TABLES = "tables"
TRINO = "trino"


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    return {TABLES: None} if spec.tables else {}


def catalog_name(spec: PlatformSpec) -> str:
    """The default catalog as Trino knows it."""
    role = registry()[spec.catalog.default].catalog
    assert role is not None
    return role.engine_name


def tables_script(server: str, statements: list[str]) -> list[str]:
    """Wait for the coordinator (10 min at most), then each statement through the Trino CLI, stopping at a failure."""
    lines = ["set -eu", f"server={server}",
             'i=0; until trino --server "$server" --user platform-tables --execute "SELECT 1" >/dev/null 2>&1; do',
             '  i=$((i + 1)); [ "$i" -lt 60 ] || { echo "Trino at $server never answered" >&2; exit 3; }; sleep 10',
             "done"]
    for sql in statements:
        lines.append(f'trino --server "$server" --user platform-tables --execute {shlex.quote(sql)}')
    lines.append('echo "declared tables applied"')
    return lines


def declare(foundation: Foundation, trino_service: pulumi.Resource | None) -> EcsTaskRun:
    """The declared tables through Trino, by a one-off task in the VPC, run whenever the declarations change."""
    ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
    tags = ctx.tags(LAYER)
    statements = [sql for table in spec.tables
                  for sql in declared_tables.trino_statements(catalog_name(spec), table.model_dump(mode="json"))]
    entry_point, command = shell(tables_script(url(spec, TRINO, "http", Side.INTERNAL), statements))
    container = Container(name=TABLES, image=spec.services[TRINO].image, memory_mib=512,
                          entry_point=entry_point, command=command)
    execution = gov_module.execution_role(ctx, gov, TABLES, [TABLES], [])
    task = task_definition(ctx, LAYER, f"{spec.name}-{TABLES}", [container], tags=tags, execution_role=execution,
                           task_role=None, secret_refs={}, cpu=256, memory=512)
    network = gov.network
    waits: list[pulumi.Resource] = [foundation.logs.groups[TABLES]]  # the task logs there from its first line
    if trino_service is not None:
        waits.append(trino_service)
    compute = foundation.cluster(Layer.COMPUTE)
    return EcsTaskRun(
        f"{spec.name}-declared-tables",
        description=f"declared tables ({', '.join(t.identifier for t in spec.tables)}) through Trino",
        cluster=compute.arn, task_definition=task.arn, subnets=network.private_subnet_ids,
        security_groups=[network.sg("engines").id], region=spec.aws.region,
        trigger=hashlib.sha256(json.dumps(statements).encode()).hexdigest(), log_group=foundation.logs.names[TABLES],
        tags=tags, opts=ctx.opts(LAYER, depends_on=waits),
    )
