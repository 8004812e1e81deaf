"""Lakekeeper: production catalog two, in Rust, on PostgreSQL (catalog layer).

Lakekeeper vends the store's host-side address (localhost:8333) to host clients, and must reach
the store at that same address itself; on docker the loopback sidecar shares its network namespace
and forwards localhost:8333 to the store's internal address.

Whole definition: defaults, the container, its jobs (migrate: the schema; warehouse: bootstrap and
the warehouse, over the management API) and loopback sidecar, the ECS task and jobs, and its role
as a catalog. Not on native: no registry serves Lakekeeper's server.

Read against Lakekeeper v0.13.3: a fresh server must be bootstrapped once (POST
/management/v1/bootstrap; again: 400 CatalogAlreadyBootstrapped, api/management/v1/server.rs)
and serves no table before a warehouse exists (POST /management/v1/warehouse; again: 409
WarehouseAlreadyExists). Creating a warehouse test-writes to its storage, so on the lab the bucket
and the loopback sidecar come first. The image is distroless (no shell, no curl): the warehouse
job runs in its own curl image, as upstream's examples/minimal does.
"""

from __future__ import annotations

from typing import Any

from infra.services import steps
from infra.services.context import ServiceContext, Side
from infra.services.definition import CatalogRole, SecretSpec, ServiceDefinition
from infra.services.placeholders import KMS_KEY_ARN, VENDING_ROLE_ARN, platform_value, secret
from infra.services.plans import ContainerHost, ContainerPlan, EcsPlan
from infra.services.seaweedfs import BUCKET_JOB as STORE_BUCKET_JOB
from infra.spec import PlatformSpec, Target

NAME = "lakekeeper"
MIGRATE_JOB = "lakekeeper-migrate"
WAREHOUSE_JOB = "lakekeeper-warehouse"
LOOPBACK = "lakekeeper-s3-loopback"
#: The project bootstrap creates (LAKEKEEPER__ENABLE_DEFAULT_PROJECT, on by default).
DEFAULT_PROJECT = "00000000-0000-0000-0000-000000000000"
NOT_NATIVE = "no build of Lakekeeper is obtainable from the package registries; it runs on docker and aws"

DEFAULT = {
    "layer": "catalog",
    "role": "production catalog two: REST, projects and warehouses, credential vending",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "ports": {"http": {"internal": 8181, "external": 8381}},
    "health": {"kind": "http", "port": "http", "path": "/health",
               "command": ["CMD", "/home/nonroot/lakekeeper", "healthcheck"]},
    "memory": "256MiB",
    "depends_on": ["postgres", "lakekeeper-migrate"],
}

MIGRATE_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "migrates Lakekeeper's schema in PostgreSQL (the platform's release)",
    "version": "0.13.3",
    "image": "quay.io/lakekeeper/catalog:v0.13.3",
    "memory": "128MiB",
    "depends_on": ["postgres"],
}

WAREHOUSE_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "bootstraps Lakekeeper and creates the warehouse (its storage profile)",
    "version": steps.CURL_VERSION,
    "image": steps.CURL_IMAGE,
    "memory": "32MiB",
    "depends_on": [NAME],
}

LOOPBACK_DEFAULT = {
    "layer": "catalog",
    "role": "forwards localhost:8333 inside Lakekeeper's network namespace to the store",
    "version": "1.8.0.3",
    "image": "alpine/socat:1.8.0.3",
    "health": {"kind": "command", "command": ["CMD", "nc", "-z", "127.0.0.1", "8333"]},
    "memory": "32MiB",
    "depends_on": ["lakekeeper", "seaweedfs"],
}


def pg_env(ctx: ServiceContext) -> dict[str, str]:
    url = f"postgresql://postgres:{secret('postgres-password')}@{ctx.address('postgres', 'pg')}/lakekeeper"
    return {
        "LAKEKEEPER__PG_DATABASE_URL_READ": url,
        "LAKEKEEPER__PG_DATABASE_URL_WRITE": url,
        "LAKEKEEPER__PG_ENCRYPTION_KEY": secret("lakekeeper-encryption-key"),
    }


def pg_env_separate(ctx: ServiceContext) -> dict[str, str]:
    """The database settings as separate variables: on aws a secret is injected whole, never inside a URL."""
    host, port = ctx.address("postgres", "pg").rsplit(":", 1)
    return {
        "LAKEKEEPER__PG_HOST_R": host, "LAKEKEEPER__PG_HOST_W": host, "LAKEKEEPER__PG_PORT": port,
        "LAKEKEEPER__PG_USER": "postgres", "LAKEKEEPER__PG_DATABASE": "lakekeeper",
        "LAKEKEEPER__PG_PASSWORD": secret("postgres-password"), "LAKEKEEPER__PG_SSL_MODE": "require",
        "LAKEKEEPER__PG_ENCRYPTION_KEY": secret("lakekeeper-encryption-key"),
    }


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=["serve"], env=pg_env(ctx))


#: On aws Lakekeeper reaches S3 as its task role, through the vending role the warehouse names
#: (``aws-system-identity``, off by default: storage/s3.rs). No external ID: the vending role trusts
#: only this account's two catalog task roles, so there is no third party to confuse.
AWS_SYSTEM_IDENTITY_ENV = {
    "LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS": "true",
    "LAKEKEEPER__S3_REQUIRE_EXTERNAL_ID_FOR_SYSTEM_CREDENTIALS": "false",
}


def ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(command=["serve"],
                   env={**pg_env_separate(ctx), "AWS_REGION": ctx.spec.aws.region, **AWS_SYSTEM_IDENTITY_ENV})


def migrate_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=["migrate"], env=pg_env(ctx))


def migrate_ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(command=["migrate"], env={**pg_env_separate(ctx), "AWS_REGION": ctx.spec.aws.region})


# -- the warehouse job: bootstrap, then the warehouse, over the management API -----------------


def key_prefix() -> str:
    """Lakekeeper's tables live under their own prefix of the bucket (no path collides with another catalog's)."""
    return NAME


def warehouse_request(spec: PlatformSpec, profile: dict[str, Any], credential: dict[str, Any]) -> dict[str, Any]:
    """``CreateWarehouseRequest`` (docs/.../management-open-api.yaml) in the default project."""
    return {
        "warehouse-name": spec.catalog.warehouse, "project-id": DEFAULT_PROJECT,
        "storage-profile": {"type": "s3", "bucket": spec.storage.bucket, "key-prefix": key_prefix(), **profile},
        "storage-credential": {"type": "s3", **credential},
    }


def lab_request(ctx: ServiceContext) -> dict[str, Any]:
    """The lab store at its host address (Lakekeeper reaches it through the loopback sidecar); no STS."""
    spec = ctx.spec
    return warehouse_request(
        spec,
        {"flavor": "s3-compat", "endpoint": ctx.url("seaweedfs", "s3", Side.EXTERNAL), "path-style-access": True,
         "region": spec.storage.region, "sts-enabled": False},
        {"credential-type": "access-key", "access-key-id": steps.EnvRef("S3_ACCESS_KEY"),
         "secret-access-key": steps.EnvRef("S3_SECRET_KEY")},
    )


def aws_request(ctx: ServiceContext) -> dict[str, Any]:
    """S3 itself: Lakekeeper assumes the vending role for its own access and for vended credentials."""
    spec = ctx.spec
    role = steps.EnvRef("VENDING_ROLE_ARN")
    return warehouse_request(
        spec,
        {"flavor": "aws", "region": spec.aws.region, "sts-enabled": True, "assume-role-arn": role,
         "sts-role-arn": role, "aws-kms-key-arn": steps.EnvRef("KMS_KEY_ARN")},
        {"credential-type": "aws-system-identity"},
    )


def warehouse_script(ctx: ServiceContext, request: dict[str, Any]) -> str:
    """Wait for health, bootstrap (400 CatalogAlreadyBootstrapped: done before), create the warehouse (409: exists)."""
    spec = ctx.spec
    api = '"$LAKEKEEPER_URL/management/v1'
    return (
        steps.Script()
        .wait("Lakekeeper health", steps.Script.call("GET", '"$LAKEKEEPER_URL/health"'))
        .step("bootstrap Lakekeeper",
              steps.Script.call("POST", f'{api}/bootstrap"', body={"accept-terms-of-use": True}),
              already=(("400", "CatalogAlreadyBootstrapped|ConcurrentBootstrap"),))
        .step(f"create warehouse {spec.catalog.warehouse}",
              steps.Script.call("POST", f'{api}/warehouse"', body=request), done=("201", "200"))
        .render()
    )


def warehouse_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(
        entrypoint=list(steps.SHELL_ENTRYPOINT), command=[warehouse_script(ctx, lab_request(ctx))],
        env={"LAKEKEEPER_URL": ctx.url(NAME, "http"), "S3_ACCESS_KEY": secret("s3-access-key"),
             "S3_SECRET_KEY": secret("s3-secret-key")},
    )


def warehouse_ecs(ctx: ServiceContext) -> EcsPlan:
    return EcsPlan(
        entry_point=list(steps.SHELL_ENTRYPOINT), command=[warehouse_script(ctx, aws_request(ctx))],
        env={"LAKEKEEPER_URL": ctx.url(NAME, "http"), "VENDING_ROLE_ARN": platform_value(VENDING_ROLE_ARN),
             "KMS_KEY_ARN": platform_value(KMS_KEY_ARN)},
    )


def loopback(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    store = ctx.address("seaweedfs", "s3")
    port = ctx.spec.services["seaweedfs"].ports["s3"].external
    return ContainerPlan(command=[f"TCP-LISTEN:{port},fork,reuseaddr", f"TCP:{store}"], network_mode_service=NAME)


CATALOG = CatalogRole(
    database="lakekeeper",
    path="/catalog",
    engine_name="lakekeeper",
    warehouse=lambda spec: spec.catalog.warehouse,
    client_properties=lambda ctx: {"header.X-Iceberg-Access-Delegation": "vended-credentials"},
    trino_properties=lambda ctx: {"iceberg.rest-catalog.vended-credentials-enabled": "true"},
    vends_credentials=True,
    ready_after=(WAREHOUSE_JOB,),
)

SERVICES = (
    ServiceDefinition(
        name=MIGRATE_JOB, default=MIGRATE_JOB_DEFAULT, job_of=NAME, summary="schema migration (the platform's release)",
        container=migrate_job, ecs=migrate_ecs, unavailable={Target.NATIVE: NOT_NATIVE},
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="REST catalog in Rust with credential vending",
        container=container, ecs=ecs, unavailable={Target.NATIVE: NOT_NATIVE}, catalog=CATALOG,
        secrets=(SecretSpec("lakekeeper-encryption-key", "lakekeeperEncryptionKey", "lab-lakekeeper-encryption-key"),),
    ),
    ServiceDefinition(
        name=WAREHOUSE_JOB, default=WAREHOUSE_JOB_DEFAULT, job_of=NAME, summary="bootstrap + the warehouse",
        container=warehouse_job, ecs=warehouse_ecs, unavailable={Target.NATIVE: NOT_NATIVE},
        after=(LOOPBACK, STORE_BUCKET_JOB),
    ),
    ServiceDefinition(
        name=LOOPBACK, default=LOOPBACK_DEFAULT, job_of=NAME, summary="localhost:8333 inside Lakekeeper's netns",
        container=loopback,
        unavailable={Target.NATIVE: "a docker sidecar; natively every service already shares 127.0.0.1",
                     Target.AWS: "a docker sidecar; on aws the catalogs reach S3 directly"},
    ),
)
