"""Polaris's configuration on both targets that run it: the server's environment (datasource, storage types,
token broker), the realm bootstrap, and the warehouse catalog request with its storage.
"""

from __future__ import annotations

from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import secret
from lakehouse_platform.services import steps
from lakehouse_platform.services.capabilities import DATABASE, DATABASE_PASSWORD, DATABASE_USER, STORE
from lakehouse_platform.services.context import ServiceContext, Side
from lakehouse_platform.services.definition import IdentitySecret
from lakehouse_platform.services.plans import jvm_heap_flag
from lakehouse_platform.services.polaris.principals import Principal, stack_principals
from lakehouse_platform.services.polaris.runtime import ENV_ROOT_CLIENT_ID, ENV_ROOT_SECRET
from lakehouse_platform.services.registry import needed

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


#: The job's config file in its container (the operations image's /etc/lakehouse is its user's).
ACCESS_CONFIG = "/etc/lakehouse/polaris-access.json"


#: Each identity's Polaris client secret (``polaris-client-secret-<identity>``, stack config
#: ``polarisClientSecret<Identity>``); its client id is the identity's name (``polaris_client_id``).
CLIENT_SECRET = IdentitySecret("polaris-client-secret", "polarisClientSecret", "Polaris client secret",
                               values=lambda identity: {"polaris_client_id": identity})


def client_secret_name(identity: str) -> str:
    """The stack secret holding an identity's Polaris client secret."""
    return CLIENT_SECRET.secret_name(identity)


def client_secret_env(identity: str) -> str:
    """The catalog job's variable holding an identity's client secret: ``POLARIS_CLIENT_SECRET_<IDENTITY>``."""
    return "POLARIS_CLIENT_SECRET_" + identity.upper().replace("-", "_")


def _env_refs(value: Any) -> Any:
    """``steps.EnvRef`` values as the job's ``${ENV:NAME}`` strings (it reads them from its environment)."""
    if isinstance(value, steps.EnvRef):
        return "${ENV:" + value.name + "}"
    if isinstance(value, dict):
        return {k: _env_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_env_refs(v) for v in value]
    return value


def access_config(ctx: ServiceContext, request: dict[str, Any],
                  principals: list[Principal] | None = None) -> dict[str, Any]:
    """The catalog job's config (``lakehouse_platform.services.polaris.runtime``): no secret, only where each one is.

    ``principals``: the stack's identities as principals unless given.
    """
    found = stack_principals(ctx.spec) if principals is None else principals
    namespaces = sorted({ns for p in found for ns in p.namespaces})
    return {
        "url": ctx.url(NAME, "http"), "realm": REALM, "wait_s": 300,
        "catalog": _env_refs(request),
        "namespaces": [ns.split(".") for ns in namespaces],
        "principals": [{"name": p.name, "client_id": p.client_id, "principal_role": p.principal_role,
                        "catalog_role": p.catalog_role, "secret_env": client_secret_env(p.name),
                        "grants": p.grant_resources()} for p in found],
    }


def check(spec: PlatformSpec) -> list[str]:
    """An identity cannot be named like Polaris's own root principal: the two would be one principal."""
    if NAME not in spec.enabled_services() or ROOT_CLIENT_ID not in spec.identities:
        return []
    return [f"identities.{ROOT_CLIENT_ID}: {ROOT_CLIENT_ID!r} is Polaris's own root principal (its client id too), "
            "and every identity is a Polaris principal of that name: name the identity otherwise, or disable polaris"]


def access_command(config_path: str) -> list[str]:
    return ["python", "-m", "lakehouse_platform.services.polaris.runtime", "--config", config_path]


def access_env(ctx: ServiceContext) -> dict[str, str]:
    """Root's credentials (this job is their only holder besides the bootstrap) and every identity's secret."""
    env = {ENV_ROOT_CLIENT_ID: ROOT_CLIENT_ID, ENV_ROOT_SECRET: secret("polaris-root-secret")}
    env.update({client_secret_env(name): secret(client_secret_name(name)) for name in ctx.spec.identities})
    return env
