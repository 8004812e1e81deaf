"""Apache Polaris: production catalog one, on PostgreSQL, OAuth2 and credential vending (catalog layer).

Whole definition: defaults, the container and its bootstrap job (realm and root principal in
PostgreSQL), the ECS task and job, and its role as a catalog (OAuth2 client credentials, vended
storage credentials). Not on native: no registry serves Polaris's server.
"""

from __future__ import annotations

from infra.services.base import (
    CatalogRole,
    ContainerHost,
    ContainerPlan,
    EcsPlan,
    SecretSpec,
    ServiceContext,
    ServiceDefinition,
    jvm_heap_flag,
    secret,
)
from infra.spec import Target

NAME = "polaris"
BOOTSTRAP_JOB = "polaris-bootstrap"
REALM = "POLARIS"
#: apache/polaris-admin-tool's ENTRYPOINT (the ECS job keeps it, passing the bootstrap command).
ADMIN_ENTRYPOINT = "/opt/jboss/container/java/run/run-java.sh"
NOT_NATIVE = "no registry serves Polaris's server (Maven Central has only polaris-core); it runs on docker and aws"

DEFAULT = {
    "layer": "catalog",
    "role": "production catalog one: REST, OAuth2, catalog roles, credential vending",
    "version": "1.7.0",
    "image": "apache/polaris:1.7.0",
    "ports": {"http": {"internal": 8181, "external": 8281}, "management": {"internal": 8182, "external": 8282}},
    "health": {"kind": "http", "port": "management", "path": "/q/health",
               "command": ["CMD-SHELL", "curl -fsS http://127.0.0.1:8182/q/health >/dev/null"]},
    "memory": "1GiB",
    "heap": "640MiB",
    "depends_on": ["postgres", "polaris-bootstrap"],
}

BOOTSTRAP_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "bootstraps Polaris's realm and root principal in PostgreSQL",
    "version": "1.7.0",
    "image": "apache/polaris-admin-tool:1.7.0",
    "memory": "512MiB",
    "depends_on": ["postgres"],
}


def datasource_env(ctx: ServiceContext) -> dict[str, str]:
    """Quarkus datasource settings pointing Polaris at its PostgreSQL database."""
    return {
        "POLARIS_PERSISTENCE_TYPE": "relational-jdbc",
        "QUARKUS_DATASOURCE_JDBC_URL": f"jdbc:postgresql://{ctx.address('postgres', 'pg')}/polaris",
        "QUARKUS_DATASOURCE_USERNAME": "postgres",
        "QUARKUS_DATASOURCE_PASSWORD": secret("postgres-password"),
        "POLARIS_REALM_CONTEXT_REALMS": REALM,
    }


def server_env(ctx: ServiceContext, storage_types: str) -> dict[str, str]:
    env = datasource_env(ctx)
    env["JAVA_OPTS_APPEND"] = jvm_heap_flag(ctx.service)
    env["POLARIS_FEATURES__SUPPORTED_CATALOG_STORAGE_TYPES_"] = storage_types
    return env


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    # Storage endpoints handed to engines must be reachable by them: path-style S3 on the lab store.
    return ContainerPlan(env=server_env(ctx, '["S3","FILE"]'))


def ecs(ctx: ServiceContext) -> EcsPlan:
    env = server_env(ctx, '["S3"]')  # no FILE storage in the cloud
    env["AWS_REGION"] = ctx.spec.aws.region
    return EcsPlan(env=env)


def bootstrap_command() -> list[str]:
    return ["bootstrap", "--realm", REALM, "--credential", f"{REALM},root,{secret('polaris-root-secret')}"]


def bootstrap_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=bootstrap_command(), env=datasource_env(ctx))


def bootstrap_ecs(ctx: ServiceContext) -> EcsPlan:
    """The admin tool's own entrypoint with the bootstrap command (its secret becomes a task variable)."""
    return EcsPlan(env=datasource_env(ctx), entry_point=[ADMIN_ENTRYPOINT], command=bootstrap_command())


CATALOG = CatalogRole(
    database="polaris",
    path="/api/catalog",
    engine_name="polaris",
    warehouse=lambda spec: spec.catalog.warehouse,
    client_properties=lambda ctx: {
        "credential": f"root:{secret('polaris-root-secret')}",
        "scope": "PRINCIPAL_ROLE:ALL",
        "header.X-Iceberg-Access-Delegation": "vended-credentials",
    },
    trino_properties=lambda ctx: {
        "iceberg.rest-catalog.security": "OAUTH2",
        "iceberg.rest-catalog.oauth2.credential": "root:${ENV:POLARIS_ROOT_SECRET}",
        "iceberg.rest-catalog.oauth2.scope": "PRINCIPAL_ROLE:ALL",
        "iceberg.rest-catalog.vended-credentials-enabled": "true",
    },
    vends_credentials=True,
)

SERVICES = (
    ServiceDefinition(
        name=BOOTSTRAP_JOB, default=BOOTSTRAP_JOB_DEFAULT, job_of=NAME, summary="realm + root principal",
        container=bootstrap_job, ecs=bootstrap_ecs, unavailable={Target.NATIVE: NOT_NATIVE},
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="REST catalog with OAuth2 and credential vending",
        container=container, ecs=ecs, unavailable={Target.NATIVE: NOT_NATIVE}, catalog=CATALOG,
        secrets=(SecretSpec("polaris-root-secret", "polarisRootSecret", "lab-polaris-root-secret"),),
    ),
)
