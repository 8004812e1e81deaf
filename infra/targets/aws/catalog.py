"""Catalog on AWS: name -> current metadata pointer, on RDS PostgreSQL, served by Polaris and Lakekeeper.

- RDS PostgreSQL (the postgres service's major version): encrypted with the platform's key,
  private, Multi-AZ, deletion-protected, automated backups for the promised retention, and its
  master password kept by RDS in Secrets Manager (``manage_master_user_password``);
- Polaris and Lakekeeper as ECS Fargate services behind an internal ALB (one listener on the
  catalog port, one host rule per catalog), reachable as ``<catalog>.<name>.internal``;
- their one-off jobs (database init, Polaris bootstrap, Lakekeeper migrate) as ECS task
  definitions, run in order by CD with the ``jobs`` stack output.

Containers are rendered from the same service plans as docker and native (infra/services); only
what differs on AWS is adapted here (credentials from Secrets Manager, S3 as the only storage).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.services import lakekeeper, polaris, postgres
from infra.services.base import ServiceContext, Side, host_of, secret, url
from infra.spec import Layer
from infra.targets.aws import governance as gov_module
from infra.targets.aws.common import fargate_size, physical_name
from infra.targets.aws.ecs import (
    Container, cluster as ecs_cluster, fargate_service, secret_names, secrets_as_variables, service_memory_mib, shell, task_definition,
)

if TYPE_CHECKING:
    from infra.layers.base import LayerComponent
    from infra.targets.aws import AwsTarget

LAYER = Layer.CATALOG
DB_INIT_JOB = "postgres-init"  # aws only: RDS creates one database; this job creates the catalogs'
POLARIS_ADMIN_ENTRYPOINT = "/opt/jboss/container/java/run/run-java.sh"  # apache/polaris-admin-tool's ENTRYPOINT
DB_USER = "postgres"
CATALOG_PATHS = {polaris.NAME: "/api/catalog", lakekeeper.NAME: "/catalog"}
# The order CD runs the one-off jobs in (each only if its service is enabled).
JOB_ORDER = (DB_INIT_JOB, polaris.BOOTSTRAP_JOB, lakekeeper.MIGRATE_JOB)


@dataclass
class CatalogState:
    cluster: aws.ecs.Cluster
    database: aws.rds.Instance | None = None
    db_identifier: str | None = None
    load_balancer: aws.lb.LoadBalancer | None = None
    target_groups: dict[str, aws.lb.TargetGroup] = field(default_factory=dict)
    services: dict[str, aws.ecs.Service] = field(default_factory=dict)
    task_definitions: dict[str, aws.ecs.TaskDefinition] = field(default_factory=dict)
    jobs: dict[str, aws.ecs.TaskDefinition] = field(default_factory=dict)
    log_sources: list[str] = field(default_factory=list)


def build(target: "AwsTarget", component: "LayerComponent") -> dict[str, Any]:
    spec = target.spec
    gov: gov_module.GovernanceState = target.governance
    enabled = spec.enabled_services()
    cluster = ecs_cluster(target, component, LAYER)
    state = CatalogState(cluster)
    target.catalog = state

    if postgres.NAME in enabled:
        _database(target, component, state)

    servers = [name for name in gov_module.CATALOG_SERVERS if name in enabled]
    if servers:
        listener = _load_balancer(target, component, state)
        for priority, name in enumerate(servers, start=1):
            _catalog_server(target, component, state, name, listener, priority)

    for job in JOB_ORDER:
        if job == DB_INIT_JOB and postgres.NAME in enabled or job in enabled:
            state.jobs[job] = _job(target, component, state, job)

    network = gov.network
    run_spec = {
        job: {
            "order": JOB_ORDER.index(job),
            "cluster": cluster.name,
            "task_definition": task.arn,
            "subnets": network.private_subnet_ids,
            "security_groups": [network.sg("catalogs").id],
            "command": run_task_command(cluster.name, task.arn, network.private_subnet_ids,
                                        [network.sg("catalogs").id]),
        }
        for job, task in state.jobs.items()
    }
    catalog_urls = {name: url(spec, name, "http", Side.INTERNAL, CATALOG_PATHS[name]) for name in servers}
    outputs: dict[str, Any] = {"cluster": cluster.name, "catalog_urls": catalog_urls, "jobs": run_spec}
    target.export(catalog_urls=catalog_urls, catalog_jobs=run_spec, catalog_cluster=cluster.name)
    if state.database is not None:
        outputs["rds_endpoint"] = state.database.endpoint
        target.export(
            rds_endpoint=state.database.endpoint,
            rds_master_secret_arn=state.database.master_user_secrets.apply(lambda s: s[0].secret_arn if s else None),
        )
    if state.load_balancer is not None:
        outputs["load_balancer"] = state.load_balancer.dns_name
        target.export(catalog_load_balancer=state.load_balancer.dns_name)
    return outputs


def run_task_command(cluster: pulumi.Input[str], task: pulumi.Input[str], subnets: list[pulumi.Input[str]],
                     groups: list[pulumi.Input[str]]) -> pulumi.Output[str]:
    """The ``aws ecs run-task`` line CD runs for a one-off job (then ``aws ecs wait tasks-stopped``)."""
    def line(values: list[Any]) -> str:
        cluster_name, task_arn, *rest = values
        subnet_ids, group_ids = rest[: len(subnets)], rest[len(subnets):]
        network = (f"awsvpcConfiguration={{subnets=[{','.join(subnet_ids)}],"
                   f"securityGroups=[{','.join(group_ids)}],assignPublicIp=DISABLED}}")
        return (f"aws ecs run-task --cluster {cluster_name} --task-definition {task_arn} --launch-type FARGATE "
                f"--network-configuration '{network}'")

    return pulumi.Output.all(cluster, task, *subnets, *groups).apply(line)


def _database(target: "AwsTarget", component: "LayerComponent", state: CatalogState) -> None:
    spec = target.spec
    gov: gov_module.GovernanceState = target.governance
    opts = target.opts(component)
    tags = target.tags(LAYER, postgres.NAME)
    major = spec.services[postgres.NAME].version.split(".")[0]
    identifier = f"{spec.name}-{pulumi.get_stack()}-catalog"
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
        enabled_cloudwatch_logs_exports=["postgresql", "upgrade"],
        tags=tags,
        # RDS would create its log groups unencrypted: wait for the observability layer's KMS-encrypted ones.
        opts=target.opts(component, depends_on=target.logs_ready),
    )
    state.database = database
    _cname(target, component, postgres.NAME, database.address)
    gov.secret_refs["postgres-password"] = database.master_user_secrets.apply(
        lambda secrets: f"{secrets[0].secret_arn}:password::"
    )


def _cname(target: "AwsTarget", component: "LayerComponent", service: str, hostname: pulumi.Input[str]) -> None:
    """``<service>.<name>.internal`` as a CNAME to an AWS-managed name (RDS endpoint, internal ALB)."""
    spec = target.spec
    gov: gov_module.GovernanceState = target.governance
    opts = target.opts(component)
    registry = aws.servicediscovery.Service(
        f"{spec.name}-{service}-dns", name=service,
        description=f"{host_of(spec, service, Side.INTERNAL)} -> the managed endpoint in front of {service}",
        dns_config={"namespace_id": gov.network.namespace.id, "dns_records": [{"type": "CNAME", "ttl": 30}],
                    "routing_policy": "WEIGHTED"},
        tags=target.tags(LAYER, service), opts=opts,
    )
    aws.servicediscovery.Instance(
        f"{spec.name}-{service}-dns", instance_id=f"{service}-endpoint", service_id=registry.id,
        attributes={"AWS_INSTANCE_CNAME": hostname}, opts=opts,
    )


def _load_balancer(target: "AwsTarget", component: "LayerComponent", state: CatalogState) -> aws.lb.Listener:
    spec = target.spec
    network = target.governance.network
    opts = target.opts(component)
    balancer = aws.lb.LoadBalancer(
        f"{spec.name}-catalogs", name=physical_name(spec, "catalogs"), internal=True, load_balancer_type="application",
        security_groups=[network.sg("lb").id], subnets=network.private_subnet_ids, drop_invalid_header_fields=True,
        idle_timeout=120, tags=target.tags(LAYER), opts=opts,
    )
    state.load_balancer = balancer
    return aws.lb.Listener(
        f"{spec.name}-catalogs-http", load_balancer_arn=balancer.arn, port=gov_module.CATALOG_PORT, protocol="HTTP",
        default_actions=[{"type": "fixed-response", "fixed_response": {
            "content_type": "text/plain", "status_code": "404",
            "message_body": f"no catalog at this host; use <catalog>.{spec.name}.internal"}}],
        tags=target.tags(LAYER), opts=opts,
    )


def _catalog_server(target: "AwsTarget", component: "LayerComponent", state: CatalogState, name: str,
                    listener: aws.lb.Listener, priority: int) -> None:
    spec = target.spec
    gov: gov_module.GovernanceState = target.governance
    network = gov.network
    service = spec.services[name]
    health = service.health
    assert health is not None and health.port is not None
    opts = target.opts(component)
    tags = target.tags(LAYER, name)
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
    _cname(target, component, name, state.load_balancer.dns_name)

    container = _server_container(target, name)
    cpu, memory = fargate_size(container.memory_mib, min_cpu=512)
    fargate_service(
        target, component, state, container, cpu=cpu, memory=memory, task_role=gov.task_roles.get(name),
        desired_count=spec.aws.catalog_task_count, security_group=network.sg("catalogs").id,
        min_healthy_percent=100, tags=tags,
        depends_on=target.logs_ready.apply(lambda groups: [*groups, rule]),
        load_balancers=[{"target_group_arn": group.arn, "container_name": name, "container_port": http_port}],
        health_check_grace_period_seconds=health.ready_timeout_s,
    )


def _database_url_parts(url_value: str) -> dict[str, str]:
    """host, port, user and database of a ``postgresql://user:password@host:port/db`` URL."""
    match = re.match(r"^postgresql://(?P<user>[^:@]+)(?::.*)?@(?P<host>[^:/@]+):(?P<port>\d+)/(?P<db>[^/?]+)$",
                     url_value)
    if match is None:
        raise ValueError(f"not a postgresql:// URL: {url_value!r}")
    return match.groupdict()


def _lakekeeper_env(plan_env: dict[str, str]) -> dict[str, str]:
    """Lakekeeper's database settings as separate variables: its password is injected whole, never in a URL."""
    parts = _database_url_parts(plan_env["LAKEKEEPER__PG_DATABASE_URL_WRITE"])
    env = {k: v for k, v in plan_env.items() if not k.startswith("LAKEKEEPER__PG_DATABASE_URL")}
    env.update({
        "LAKEKEEPER__PG_HOST_R": parts["host"],
        "LAKEKEEPER__PG_HOST_W": parts["host"],
        "LAKEKEEPER__PG_PORT": parts["port"],
        "LAKEKEEPER__PG_USER": parts["user"],
        "LAKEKEEPER__PG_DATABASE": parts["db"],
        "LAKEKEEPER__PG_PASSWORD": secret("postgres-password"),
        "LAKEKEEPER__PG_SSL_MODE": "require",
    })
    return env


def _server_container(target: "AwsTarget", name: str) -> Container:
    spec = target.spec
    service = spec.services[name]
    ctx = ServiceContext(spec, name)
    if name == polaris.NAME:
        plan = polaris.container(ctx)
        env = {**service.env, **plan.env}
        env["POLARIS_FEATURES__SUPPORTED_CATALOG_STORAGE_TYPES_"] = '["S3"]'  # no FILE storage in the cloud
        env["AWS_REGION"] = spec.aws.region
    else:
        plan = lakekeeper.container(ctx)
        env = _lakekeeper_env({**service.env, **plan.env})
        env["AWS_REGION"] = spec.aws.region
    return Container(
        name=name, image=service.image, memory_mib=service_memory_mib(service), env=env,
        command=list(service.command or plan.command),
        ports=sorted({port.internal for port in service.ports.values()}, key=lambda p: p != service.ports["http"].internal),
        health=service.health,
    )


def _job_container(target: "AwsTarget", job: str) -> Container:
    spec = target.spec
    if job == DB_INIT_JOB:
        pg = spec.services[postgres.NAME]
        creates = " ".join(postgres.DATABASES)
        entry_point, command = shell([
            "set -e",
            f"for db in {creates}; do",
            "  psql -tAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\" | grep -q 1 || psql -c \"CREATE DATABASE $db\"",
            "done",
        ])
        return Container(
            name=job, image=pg.image, memory_mib=256, entry_point=entry_point, command=command,
            env={"PGHOST": host_of(spec, postgres.NAME, Side.INTERNAL), "PGPORT": str(pg.ports["pg"].internal),
                 "PGUSER": DB_USER, "PGDATABASE": "postgres", "PGSSLMODE": "require",
                 "PGPASSWORD": secret("postgres-password")},
        )
    service = spec.services[job]
    ctx = ServiceContext(spec, job)
    if job == polaris.BOOTSTRAP_JOB:
        plan = polaris.bootstrap_job(ctx)
        entry_point, command, secret_env = secrets_as_variables(plan.command, [POLARIS_ADMIN_ENTRYPOINT])
        env = {**service.env, **plan.env, **secret_env}
        return Container(name=job, image=service.image, memory_mib=service_memory_mib(service),
                         entry_point=entry_point, command=command, env=env)
    plan = lakekeeper.migrate_job(ctx)
    return Container(name=job, image=service.image, memory_mib=service_memory_mib(service),
                     command=list(service.command or plan.command), env=_lakekeeper_env({**service.env, **plan.env}))


def _job(target: "AwsTarget", component: "LayerComponent", state: CatalogState, job: str) -> aws.ecs.TaskDefinition:
    spec = target.spec
    gov: gov_module.GovernanceState = target.governance
    container = _job_container(target, job)
    owner_service = postgres.NAME if job == DB_INIT_JOB else job
    execution = gov_module.execution_role(target, job, [job], secret_names(container.env))
    cpu, memory = fargate_size(container.memory_mib)
    state.log_sources.append(job)
    return task_definition(
        target, component, f"{spec.name}-{job}", [container],
        tags=target.tags(LAYER, owner_service, **{"lakehouse.kind": "job"}), execution_role=execution,
        task_role=None, secret_refs=gov.secret_refs, cpu=cpu, memory=memory,
    )
