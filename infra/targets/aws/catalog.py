"""Catalog on AWS: name -> current metadata pointer, on RDS PostgreSQL, served by Polaris and Lakekeeper.

- RDS PostgreSQL (the postgres service's major version): encrypted with the platform's key,
  private, Multi-AZ, deletion-protected, automated backups for the promised retention, and its
  master password kept by RDS in Secrets Manager (``manage_master_user_password``);
- Polaris and Lakekeeper as ECS Fargate services behind an internal ALB (one listener on the
  catalog port, one host rule per catalog), reachable as ``<catalog>.<name>.internal``;
- their one-off jobs (database init, Polaris bootstrap, Lakekeeper migrate) as ECS task
  definitions, run in order by CD with the ``jobs`` stack output.

Containers are rendered from each service definition's ``ecs`` plan (infra/services); this module
only places them (load balancer, DNS, task roles, jobs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.services import registry
from infra.services.context import Side, host_of, url
from infra.services.placeholders import secret
from infra.services.plans import EcsPlan
from infra.services.postgres import config as postgres
from infra.spec import Layer, PlatformSpec
from infra.targets.aws import governance as gov_module
from infra.targets.aws.common import fargate_size, physical_name
from infra.targets.aws.ecs import (
    Container,
    container_of,
    fargate_service,
    secret_names,
    shell,
    task_definition,
)
from infra.targets.aws.ecs import cluster as ecs_cluster

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.observability import LogGroups

LAYER = Layer.CATALOG
DB_INIT_JOB = "postgres-init"  # aws only: RDS creates one database; this job creates the catalogs'
DB_USER = "postgres"
RDS_LOG_EXPORTS = ("postgresql", "upgrade")


def db_identifier(spec: PlatformSpec) -> str:
    return f"{spec.name}-{pulumi.get_stack()}-catalog"


def jobs(spec: PlatformSpec) -> list[str]:
    """The one-off jobs, in the order CD runs them: the database init, then each catalog's jobs (start order)."""
    enabled = spec.enabled_services()
    ordered = [DB_INIT_JOB] if postgres.NAME in enabled else []
    return ordered + [n for n in spec.start_order() if spec.services[n].kind == "job" and registry()[n].ecs]


def log_sources(spec: PlatformSpec) -> dict[str, str | None]:
    """The log groups this layer writes to (None: the platform's default name for the source)."""
    sources: dict[str, str | None] = {name: None for name in gov_module.catalog_servers(spec)}
    sources.update({job: None for job in jobs(spec)})
    if postgres.NAME in spec.enabled_services():
        for export in RDS_LOG_EXPORTS:
            sources[f"rds-{export}"] = f"/aws/rds/instance/{db_identifier(spec)}/{export}"
    return sources


@dataclass
class CatalogState:
    cluster: aws.ecs.Cluster
    secret_refs: dict[str, pulumi.Input[str]]  # governance's secrets plus the database's own
    database: aws.rds.Instance | None = None
    db_identifier: str | None = None
    load_balancer: aws.lb.LoadBalancer | None = None
    target_groups: dict[str, aws.lb.TargetGroup] = field(default_factory=dict)
    services: dict[str, aws.ecs.Service] = field(default_factory=dict)
    task_definitions: dict[str, aws.ecs.TaskDefinition] = field(default_factory=dict)
    jobs: dict[str, aws.ecs.TaskDefinition] = field(default_factory=dict)
    run_spec: dict[str, Any] = field(default_factory=dict)
    catalog_urls: dict[str, str] = field(default_factory=dict)

    def layer_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cluster": self.cluster.name, "catalog_urls": self.catalog_urls, "jobs": self.run_spec}
        if self.database is not None:
            out["rds_endpoint"] = self.database.endpoint
        if self.load_balancer is not None:
            out["load_balancer"] = self.load_balancer.dns_name
        return out

    def stack_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"catalog_urls": self.catalog_urls, "catalog_jobs": self.run_spec,
                               "catalog_cluster": self.cluster.name}
        if self.database is not None:
            out["rds_endpoint"] = self.database.endpoint
            out["rds_master_secret_arn"] = self.database.master_user_secrets.apply(
                lambda s: s[0].secret_arn if s else None)
        if self.load_balancer is not None:
            out["catalog_load_balancer"] = self.load_balancer.dns_name
        return out


def build(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups) -> CatalogState:
    spec = ctx.spec
    enabled = spec.enabled_services()
    cluster = ecs_cluster(ctx, LAYER)
    state = CatalogState(cluster, secret_refs=dict(gov.secret_refs))

    if postgres.NAME in enabled:
        _database(ctx, gov, logs, state)

    servers = gov_module.catalog_servers(spec)
    if servers:
        listener = _load_balancer(ctx, gov, state)
        for priority, name in enumerate(servers, start=1):
            _catalog_server(ctx, gov, logs, state, name, listener, priority)

    order = jobs(spec)
    for job in order:
        state.jobs[job] = _job(ctx, gov, state, job)

    network = gov.network
    state.run_spec = {
        job: {
            "order": order.index(job),
            "cluster": cluster.name,
            "task_definition": task.arn,
            "subnets": network.private_subnet_ids,
            "security_groups": [network.sg("catalogs").id],
            "command": run_task_command(cluster.name, task.arn, network.private_subnet_ids,
                                        [network.sg("catalogs").id]),
        }
        for job, task in state.jobs.items()
    }
    for name in servers:
        role = registry()[name].catalog
        assert role is not None
        state.catalog_urls[name] = url(spec, name, "http", Side.INTERNAL, role.path)
    return state


def run_task_command(cluster: pulumi.Input[str], task: pulumi.Input[str], subnets: Sequence[pulumi.Input[str]],
                     groups: Sequence[pulumi.Input[str]]) -> pulumi.Output[str]:
    """The ``aws ecs run-task`` line CD runs for a one-off job (then ``aws ecs wait tasks-stopped``)."""
    def line(values: list[Any]) -> str:
        cluster_name, task_arn, *rest = values
        subnet_ids, group_ids = rest[: len(subnets)], rest[len(subnets):]
        network = (f"awsvpcConfiguration={{subnets=[{','.join(subnet_ids)}],"
                   f"securityGroups=[{','.join(group_ids)}],assignPublicIp=DISABLED}}")
        return (f"aws ecs run-task --cluster {cluster_name} --task-definition {task_arn} --launch-type FARGATE "
                f"--network-configuration '{network}'")

    return pulumi.Output.all(cluster, task, *subnets, *groups).apply(line)


def _database(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups, state: CatalogState) -> None:
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER, postgres.NAME)
    major = spec.services[postgres.NAME].version.split(".")[0]
    identifier = db_identifier(spec)
    subnets = aws.rds.SubnetGroup(
        f"{spec.name}-catalog-db", name=identifier, description=f"{spec.name}: private subnets of the catalog database",
        subnet_ids=gov.network.private_subnet_ids, tags=tags, opts=opts,
    )
    parameters = aws.rds.ParameterGroup(
        f"{spec.name}-catalog-db", name=f"{identifier}-pg{major}", family=f"postgres{major}",
        description=f"{spec.name}: TLS only; logical WAL for Debezium (as postgres.SERVER_SETTINGS on the lab)",
        parameters=[
            {"name": "rds.force_ssl", "value": "1", "apply_method": "immediate"},
            {"name": "rds.logical_replication", "value": "1", "apply_method": "pending-reboot"},
            {"name": "max_wal_senders", "value": postgres.SERVER_SETTINGS["max_wal_senders"],
             "apply_method": "pending-reboot"},
            {"name": "max_replication_slots", "value": postgres.SERVER_SETTINGS["max_replication_slots"],
             "apply_method": "pending-reboot"},
        ],
        tags=tags, opts=opts,
    )
    state.db_identifier = identifier
    database = aws.rds.Instance(
        f"{spec.name}-catalog-db",
        identifier=identifier,
        engine="postgres",
        engine_version=major,
        instance_class=spec.aws.rds_instance_class,
        allocated_storage=spec.aws.rds_allocated_storage_gb,
        max_allocated_storage=spec.aws.rds_allocated_storage_gb * 4,
        storage_type="gp3",
        storage_encrypted=True,
        kms_key_id=gov.key.arn,
        username=DB_USER,
        manage_master_user_password=True,
        master_user_secret_kms_key_id=gov.key.arn,
        db_subnet_group_name=subnets.name,
        parameter_group_name=parameters.name,
        vpc_security_group_ids=[gov.network.sg("db").id],
        publicly_accessible=False,
        multi_az=True,
        backup_retention_period=spec.recovery.backup_retention_days,
        backup_window="02:00-02:30",
        maintenance_window="sun:04:00-sun:05:00",
        copy_tags_to_snapshot=True,
        delete_automated_backups=False,
        deletion_protection=True,
        skip_final_snapshot=False,
        final_snapshot_identifier=f"{identifier}-final",
        auto_minor_version_upgrade=True,
        iam_database_authentication_enabled=True,
        performance_insights_enabled=True,
        performance_insights_kms_key_id=gov.key.arn,
        enabled_cloudwatch_logs_exports=list(RDS_LOG_EXPORTS),
        tags=tags,
        # RDS would create its log groups unencrypted: wait for the observability layer's KMS-encrypted ones.
        opts=ctx.opts(LAYER, depends_on=[logs.group(f"rds-{export}") for export in RDS_LOG_EXPORTS]),
    )
    state.database = database
    _cname(ctx, gov, postgres.NAME, database.address)
    state.secret_refs["postgres-password"] = database.master_user_secrets.apply(
        lambda secrets: f"{secrets[0].secret_arn}:password::"
    )


def _cname(ctx: AwsContext, gov: gov_module.GovernanceState, service: str, hostname: pulumi.Input[str]) -> None:
    """``<service>.<name>.internal`` as a CNAME to an AWS-managed name (RDS endpoint, internal ALB)."""
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    registry = aws.servicediscovery.Service(
        f"{spec.name}-{service}-dns", name=service,
        description=f"{host_of(spec, service, Side.INTERNAL)} -> the managed endpoint in front of {service}",
        dns_config={"namespace_id": gov.network.namespace.id, "dns_records": [{"type": "CNAME", "ttl": 30}],
                    "routing_policy": "WEIGHTED"},
        tags=ctx.tags(LAYER, service), opts=opts,
    )
    aws.servicediscovery.Instance(
        f"{spec.name}-{service}-dns", instance_id=f"{service}-endpoint", service_id=registry.id,
        attributes={"AWS_INSTANCE_CNAME": hostname}, opts=opts,
    )


def _load_balancer(ctx: AwsContext, gov: gov_module.GovernanceState, state: CatalogState) -> aws.lb.Listener:
    spec = ctx.spec
    network = gov.network
    opts = ctx.opts(LAYER)
    balancer = aws.lb.LoadBalancer(
        f"{spec.name}-catalogs", name=physical_name(spec, "catalogs"), internal=True, load_balancer_type="application",
        security_groups=[network.sg("lb").id], subnets=network.private_subnet_ids, drop_invalid_header_fields=True,
        idle_timeout=120, tags=ctx.tags(LAYER), opts=opts,
    )
    state.load_balancer = balancer
    return aws.lb.Listener(
        f"{spec.name}-catalogs-http", load_balancer_arn=balancer.arn, port=gov_module.Ports.of(spec).catalog,
        protocol="HTTP",
        default_actions=[{"type": "fixed-response", "fixed_response": {
            "content_type": "text/plain", "status_code": "404",
            "message_body": f"no catalog at this host; use <catalog>.{spec.name}.internal"}}],
        tags=ctx.tags(LAYER), opts=opts,
    )


def _catalog_server(ctx: AwsContext, gov: gov_module.GovernanceState, logs: LogGroups, state: CatalogState,
                    name: str, listener: aws.lb.Listener, priority: int) -> None:
    spec = ctx.spec
    network = gov.network
    service = spec.services[name]
    health = service.health
    assert health is not None and health.port is not None
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER, name)
    http_port = service.ports["http"].internal
    health_port = service.ports[health.port].internal
    interval = min(max(health.interval_s, 5), 300)
    group = aws.lb.TargetGroup(
        f"{spec.name}-{name}", name=physical_name(spec, name), port=http_port, protocol="HTTP", target_type="ip",
        vpc_id=network.vpc.id, deregistration_delay=30,
        health_check={
            "enabled": True, "protocol": "HTTP", "path": health.path,
            "port": "traffic-port" if health_port == http_port else str(health_port),
            "interval": interval, "timeout": min(max(health.timeout_s, 2), interval - 1),
            "healthy_threshold": 2, "unhealthy_threshold": min(max(health.retries, 2), 10), "matcher": "200",
        },
        tags=tags, opts=opts,
    )
    rule = aws.lb.ListenerRule(
        f"{spec.name}-{name}", listener_arn=listener.arn, priority=priority * 10,
        conditions=[{"host_header": {"values": [host_of(spec, name, Side.INTERNAL)]}}],
        actions=[{"type": "forward", "target_group_arn": group.arn}],
        tags=tags, opts=opts,
    )
    state.target_groups[name] = group
    assert state.load_balancer is not None
    _cname(ctx, gov, name, state.load_balancer.dns_name)

    container = container_of(ctx, name)
    cpu, memory = fargate_size(container.memory_mib, min_cpu=512)
    deployed = fargate_service(
        ctx, LAYER, gov, logs, state.cluster, container, cpu=cpu, memory=memory, task_role=gov.task_roles.get(name),
        desired_count=spec.aws.catalog_task_count, security_group=network.sg("catalogs").id,
        min_healthy_percent=100, tags=tags, secret_refs=state.secret_refs, depends_on=[rule],
        load_balancers=[{"target_group_arn": group.arn, "container_name": name, "container_port": http_port}],
        health_check_grace_period_seconds=health.ready_timeout_s,
    )
    state.task_definitions[name] = deployed.task_definition
    state.services[name] = deployed.service


def _db_init_container(ctx: AwsContext) -> Container:
    """RDS creates one database; this job creates the catalogs' and the bookshop's (idempotent)."""
    spec = ctx.spec
    pg = spec.services[postgres.NAME]
    creates = " ".join(postgres.DATABASES)
    entry_point, command = shell([
        "set -e",
        f"for db in {creates}; do",
        "  psql -tAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\" | grep -q 1 \\",
        "    || psql -c \"CREATE DATABASE $db\"",
        "done",
    ])
    plan = EcsPlan(entry_point=entry_point, command=command, env={
        "PGHOST": host_of(spec, postgres.NAME, Side.INTERNAL), "PGPORT": str(pg.ports["pg"].internal),
        "PGUSER": DB_USER, "PGDATABASE": "postgres", "PGSSLMODE": "require", "PGPASSWORD": secret("postgres-password"),
    })
    return Container(name=DB_INIT_JOB, image=pg.image, memory_mib=256, env=plan.env, command=plan.command,
                     entry_point=plan.entry_point)


def _job(ctx: AwsContext, gov: gov_module.GovernanceState, state: CatalogState, job: str) -> aws.ecs.TaskDefinition:
    spec = ctx.spec
    container = _db_init_container(ctx) if job == DB_INIT_JOB else container_of(ctx, job, with_health=False)
    owner_service = postgres.NAME if job == DB_INIT_JOB else job
    execution = gov_module.execution_role(ctx, gov, job, [job], secret_names(container.env), state.secret_refs)
    cpu, memory = fargate_size(container.memory_mib)
    return task_definition(
        ctx, LAYER, f"{spec.name}-{job}", [container],
        tags=ctx.tags(LAYER, owner_service, **{"lakehouse.kind": "job"}), execution_role=execution,
        task_role=None, secret_refs=state.secret_refs, cpu=cpu, memory=memory,
    )
