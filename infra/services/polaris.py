"""Apache Polaris: production catalog one, on PostgreSQL, OAuth2 and credential vending (catalog layer)."""

from __future__ import annotations

from infra.services.base import ContainerPlan, ServiceContext, jvm_heap_flag, secret

NAME = "polaris"
REALM = "POLARIS"

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

BOOTSTRAP_JOB = "polaris-bootstrap"

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


def container(ctx: ServiceContext) -> ContainerPlan:
    env = datasource_env(ctx)
    env["JAVA_OPTS_APPEND"] = jvm_heap_flag(ctx.service)
    # Storage endpoints handed to engines must be reachable by them: path-style S3 on the lab store.
    env["POLARIS_FEATURES__SUPPORTED_CATALOG_STORAGE_TYPES_"] = '["S3","FILE"]'
    return ContainerPlan(env=env)


def bootstrap_job(ctx: ServiceContext) -> ContainerPlan:
    env = datasource_env(ctx)
    return ContainerPlan(
        command=["bootstrap", "--realm", REALM, "--credential", f"{REALM},root,{secret('polaris-root-secret')}"],
        env=env,
    )
