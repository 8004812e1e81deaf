"""Polaris's configuration on both targets that run it: the server's environment (datasource, storage types,
token broker), the realm bootstrap, and the warehouse catalog request with its storage.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from infra.services import steps
from infra.services.capabilities import DATABASE, DATABASE_PASSWORD, DATABASE_USER, STORE
from infra.services.context import ServiceContext, Side
from infra.services.placeholders import secret
from infra.services.plans import jvm_heap_flag
from infra.services.registry import needed
from infra.spec import PlatformSpec

NAME = "polaris"
#: Its database on the platform's database (``CatalogRole.database``).
DATABASE_NAME = "polaris"


BOOTSTRAP_JOB = "polaris-bootstrap"


CATALOG_JOB = "polaris-catalog"


REALM = "POLARIS"


ROOT_CLIENT_ID = "root"


#: apache/polaris-admin-tool's ENTRYPOINT (the ECS job keeps it, passing the bootstrap command).
ADMIN_ENTRYPOINT = "/opt/jboss/container/java/run/run-java.sh"


def datasource_env(ctx: ServiceContext) -> dict[str, str]:
    """Quarkus datasource settings pointing Polaris at its PostgreSQL database."""
    return {
        "POLARIS_PERSISTENCE_TYPE": "relational-jdbc",
        "QUARKUS_DATASOURCE_JDBC_URL":
            f"jdbc:postgresql://{ctx.address(needed(ctx.spec, DATABASE, ctx.name), 'pg')}/{DATABASE_NAME}",
        "QUARKUS_DATASOURCE_USERNAME": DATABASE_USER,
        "QUARKUS_DATASOURCE_PASSWORD": secret(DATABASE_PASSWORD),
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


def bootstrap_command() -> list[str]:
    return ["bootstrap", "--realm", REALM, "--credential", f"{REALM},root,{secret('polaris-root-secret')}"]


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
    store = needed(ctx.spec, STORE, ctx.name)
    return {"endpoint": ctx.url(store, "s3", Side.EXTERNAL), "endpointInternal": ctx.url(store, "s3"),
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
