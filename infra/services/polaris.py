"""Apache Polaris: production catalog one, on PostgreSQL, OAuth2 and credential vending (catalog layer).

Whole definition: defaults, the container and its two jobs (the bootstrap job: realm and root
principal in PostgreSQL; the catalog job: the warehouse catalog with its storage and grants, over
the management API), the ECS task and jobs, and its role as a catalog (OAuth2 client credentials,
vended storage credentials). Not on native: no registry serves Polaris's server.

Read against Polaris 1.7.0 (tag apache-polaris-1.7.0):
- only S3 is a supported storage type: FILE is "considered insecure", a severe production
  readiness issue, and 1.7.0 aborts startup on one (runtime/service/.../ProductionReadinessChecks.java);
- every replica signs tokens with the one symmetric key from the stack's secrets: the default
  generates a key pair per process, so behind a load balancer a token minted by one task fails on
  the other (site/.../configuring-polaris-for-production/_index.md);
- on the lab the store has no STS: the catalog says ``stsUnavailable``, Polaris vends no keys and
  reaches the store with its own (``AWS_*``), as upstream's MinIO/RustFS guides do;
- a new catalog's ``catalog_admin`` holds only CATALOG_MANAGE_ACCESS and _METADATA
  (AtomicOperationMetaStoreManager.createCatalog); the data privileges credential vending needs
  come with CATALOG_MANAGE_CONTENT, which the catalog job grants.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from infra.services import steps
from infra.services.base import (
    KMS_KEY_ARN,
    VENDING_ROLE_ARN,
    CatalogRole,
    ContainerHost,
    ContainerPlan,
    EcsPlan,
    SecretSpec,
    ServiceContext,
    ServiceDefinition,
    Side,
    jvm_heap_flag,
    platform_value,
    secret,
)
from infra.services.seaweedfs import BUCKET_JOB as STORE_BUCKET_JOB
from infra.spec import PlatformSpec, Target

NAME = "polaris"
BOOTSTRAP_JOB = "polaris-bootstrap"
CATALOG_JOB = "polaris-catalog"
REALM = "POLARIS"
ROOT_CLIENT_ID = "root"
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

CATALOG_JOB_DEFAULT = {
    "layer": "catalog",
    "kind": "job",
    "role": "creates the warehouse catalog in Polaris (its storage) and grants its admins its content",
    "version": steps.CURL_VERSION,
    "image": steps.CURL_IMAGE,
    "memory": "32MiB",
    "depends_on": [NAME],
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


#: Property names as environment names (upstream's compose files do the same): the uppercase form
#: is ambiguous for quoted map keys and per-realm maps (configuring-polaris.md, "complex property names").
STORAGE_TYPES_PROPERTY = 'polaris.features."SUPPORTED_CATALOG_STORAGE_TYPES"'
TOKEN_BROKER_TYPE_PROPERTY = "polaris.authentication.token-broker.type"  # noqa: S105 - a property name
TOKEN_KEY_PROPERTY = "polaris.authentication.token-broker.symmetric-key.secret"  # noqa: S105 - a property name


def server_env(ctx: ServiceContext) -> dict[str, str]:
    env = datasource_env(ctx)
    # One signing key for every replica (and across restarts), from the stack's secrets; the broker
    # type as a system property (a setting, not a credential, whatever its name says).
    env["JAVA_OPTS_APPEND"] = f"{jvm_heap_flag(ctx.service)} -D{TOKEN_BROKER_TYPE_PROPERTY}=symmetric-key"
    env[TOKEN_KEY_PROPERTY] = secret("polaris-token-key")
    # S3 only, on every target: FILE would abort startup (severe readiness issue in 1.7.0).
    env[STORAGE_TYPES_PROPERTY] = '["S3"]'
    return env


def container(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    """Polaris on the lab store: with STS unavailable it reads and writes with the store's own keys."""
    env = server_env(ctx)
    env.update({"AWS_REGION": ctx.spec.storage.region, "AWS_ACCESS_KEY_ID": secret("s3-access-key"),
                "AWS_SECRET_ACCESS_KEY": secret("s3-secret-key")})
    return ContainerPlan(env=env)


def ecs(ctx: ServiceContext) -> EcsPlan:
    """Polaris on Fargate: its task role may only assume the vending role, which the catalog names."""
    env = server_env(ctx)
    env["AWS_REGION"] = ctx.spec.aws.region
    return EcsPlan(env=env)


def bootstrap_command() -> list[str]:
    return ["bootstrap", "--realm", REALM, "--credential", f"{REALM},root,{secret('polaris-root-secret')}"]


def bootstrap_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(command=bootstrap_command(), env=datasource_env(ctx))


def bootstrap_ecs(ctx: ServiceContext) -> EcsPlan:
    """The admin tool's own entrypoint with the bootstrap command (its secret becomes a task variable)."""
    return EcsPlan(env=datasource_env(ctx), entry_point=[ADMIN_ENTRYPOINT], command=bootstrap_command())


# -- the catalog job: the warehouse catalog, over the management API --------------------------


def base_location(spec: PlatformSpec) -> str:
    """Where Polaris's tables live: its own prefix, so no other catalog's table path can collide."""
    return f"s3://{spec.storage.bucket}/{NAME}/"


def catalog_request(spec: PlatformSpec, storage: dict[str, Any]) -> dict[str, Any]:
    """``CreateCatalogRequest`` (spec/polaris-management-service.yml): an internal catalog on S3."""
    location = base_location(spec)
    return {"catalog": {
        "name": spec.catalog.warehouse, "type": "INTERNAL", "readOnly": False,
        "properties": {"default-base-location": location},
        "storageConfigInfo": {"storageType": "S3", "allowedLocations": [location], **storage},
    }}


def lab_storage(ctx: ServiceContext) -> dict[str, Any]:
    """The lab store: clients see its host address, Polaris uses the internal one; no STS there."""
    return {"endpoint": ctx.url("seaweedfs", "s3", Side.EXTERNAL), "endpointInternal": ctx.url("seaweedfs", "s3"),
            "pathStyleAccess": True, "stsUnavailable": True, "region": ctx.spec.storage.region}


def aws_storage(ctx: ServiceContext) -> dict[str, Any]:
    """S3 itself: Polaris assumes the vending role; listing the key lets the vended session encrypt with it."""
    key = steps.EnvRef("KMS_KEY_ARN")
    return {"roleArn": steps.EnvRef("VENDING_ROLE_ARN"), "region": ctx.spec.aws.region,
            "currentKmsKey": key, "allowedKmsKeys": [key]}


CATALOG_ADMIN_GRANT = {"grant": {"type": "catalog", "privilege": "CATALOG_MANAGE_CONTENT"}}


def catalog_script(ctx: ServiceContext, request: dict[str, Any]) -> str:
    """Token (waiting for Polaris), create the catalog (409: it exists), grant content to catalog_admin."""
    spec = ctx.spec
    name = spec.catalog.warehouse
    management = '"$POLARIS_URL/api/management/v1'
    grants = f"{management}/catalogs/{quote(name, safe='')}/catalog-roles/catalog_admin/grants"
    auth = ['-H "Authorization: Bearer $token"', '-H "Polaris-Realm: $POLARIS_REALM"']
    token = steps.Script.call(
        "POST", '"$POLARIS_URL/api/catalog/v1/oauth/tokens"', '-H "Polaris-Realm: $POLARIS_REALM"',
        "--data-urlencode grant_type=client_credentials", '--data-urlencode "client_id=$POLARIS_CLIENT_ID"',
        '--data-urlencode "client_secret=$POLARIS_CLIENT_SECRET"', "--data-urlencode scope=PRINCIPAL_ROLE:ALL")
    return (
        steps.Script()
        .wait("Polaris token endpoint", token)
        .shell(r"""token=$(sed -n 's/.*"access_token"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$out")""",
               '[ -n "$token" ] || fail "Polaris token endpoint: no access_token in its answer"')
        .step(f"create catalog {name}", steps.Script.call("POST", f'{management}/catalogs"', *auth, body=request),
              done=("201", "200"))
        .step(f"grant CATALOG_MANAGE_CONTENT on {name} to catalog_admin",
              steps.Script.call("PUT", f'{grants}"', *auth, body=CATALOG_ADMIN_GRANT), already=())
        .render()
    )


def catalog_job_env(ctx: ServiceContext) -> dict[str, str]:
    return {"POLARIS_URL": ctx.url(NAME, "http"), "POLARIS_REALM": REALM, "POLARIS_CLIENT_ID": ROOT_CLIENT_ID,
            "POLARIS_CLIENT_SECRET": secret("polaris-root-secret")}


def catalog_job(ctx: ServiceContext, host: ContainerHost) -> ContainerPlan:
    return ContainerPlan(entrypoint=list(steps.SHELL_ENTRYPOINT),
                         command=[catalog_script(ctx, catalog_request(ctx.spec, lab_storage(ctx)))],
                         env=catalog_job_env(ctx))


def catalog_ecs(ctx: ServiceContext) -> EcsPlan:
    env = catalog_job_env(ctx)
    env.update({"VENDING_ROLE_ARN": platform_value(VENDING_ROLE_ARN), "KMS_KEY_ARN": platform_value(KMS_KEY_ARN)})
    return EcsPlan(env=env, entry_point=list(steps.SHELL_ENTRYPOINT),
                   command=[catalog_script(ctx, catalog_request(ctx.spec, aws_storage(ctx)))])


CATALOG = CatalogRole(
    database="polaris",
    path="/api/catalog",
    engine_name="polaris",
    warehouse=lambda spec: spec.catalog.warehouse,
    tables_location=base_location,
    client_properties=lambda ctx: {
        "credential": f"{ROOT_CLIENT_ID}:{secret('polaris-root-secret')}",
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
    ready_after=(CATALOG_JOB,),
)

SERVICES = (
    ServiceDefinition(
        name=BOOTSTRAP_JOB, default=BOOTSTRAP_JOB_DEFAULT, job_of=NAME, summary="realm + root principal",
        container=bootstrap_job, ecs=bootstrap_ecs, unavailable={Target.NATIVE: NOT_NATIVE},
    ),
    ServiceDefinition(
        name=NAME, default=DEFAULT, summary="REST catalog with OAuth2 and credential vending",
        container=container, ecs=ecs, unavailable={Target.NATIVE: NOT_NATIVE}, catalog=CATALOG,
        secrets=(SecretSpec("polaris-root-secret", "polarisRootSecret", "lab-polaris-root-secret"),
                 SecretSpec("polaris-token-key", "polarisTokenKey", "lab-polaris-token-signing-key")),
    ),
    ServiceDefinition(
        name=CATALOG_JOB, default=CATALOG_JOB_DEFAULT, job_of=NAME,
        summary="the warehouse catalog, its storage and catalog_admin's content grant",
        container=catalog_job, ecs=catalog_ecs, unavailable={Target.NATIVE: NOT_NATIVE},
        after=(STORE_BUCKET_JOB,),
    ),
)
