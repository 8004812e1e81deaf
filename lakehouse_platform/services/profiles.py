"""Engine connection profiles for both sides of the network, for any identity.

Host-side clients (Spark, PyIceberg, DuckDB, the Trino client) get external addresses; engines
running next to the services (Trino's catalog files, Flink's catalog DDL) get internal ones. Profiles
hold no secret: the credentials an identity uses are placeholders (``{s3_access_key}``,
``{s3_secret_key}``, ``{catalog_token}``, ``{trino_user}``, ``{trino_password}``) that a client fills
from the ``credentials`` secret output, ``credentials.identities.<identity>`` (``fill``), including its own
principal at a catalog that has them (``{polaris_client_id}``, ``{polaris_client_secret}``); the platform's
own secrets are at the top level of ``credentials``, a catalog's root/admin credential nowhere. The
host profiles name the identity engines that write use (``identity``) and the read-only one
(``reader_identity``); the same profile filled with the reader's credentials is a reader's client.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.placeholders import SECRET_TOKEN, secret
from lakehouse_platform.runtime.config import TOKEN_PATH
from lakehouse_platform.services.capabilities import STORE
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import ServiceContext, Side, url
from lakehouse_platform.services.registry import registry

#: What a client fills a profile's placeholders from (credentials.identities.<name> and the top level).
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


def fill(profile: Any, credentials: Mapping[str, Any], identity: str | None = None) -> Any:
    """``profile`` (a dict, list or string) with its ``{placeholders}`` filled for ``identity``.

    ``credentials`` is the ``credentials`` stack output; ``identity`` defaults to none (top-level names
    only). A placeholder with no value is an error naming it, never sent as a literal.
    """
    values: dict[str, Any] = {k: v for k, v in credentials.items() if not isinstance(v, Mapping)}
    if identity is not None:
        found = (credentials.get("identities") or {}).get(identity)
        if found is None:
            raise KeyError(f"no credentials for identity {identity!r}; known: "
                           f"{', '.join(credentials.get('identities') or {}) or 'none'}")
        values.update(found)

    def one(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in values:
                raise KeyError(f"profile placeholder {{{name}}} has no value for identity {identity!r}")
            return str(values[name])
        return PLACEHOLDER.sub(value, text)

    if isinstance(profile, str):
        return one(profile)
    if isinstance(profile, Mapping):
        return {k: fill(v, credentials, identity) for k, v in profile.items()}
    if isinstance(profile, list):
        return [fill(v, credentials, identity) for v in profile]
    return profile


# -- reading them back from a deployed stack's outputs (host clients, the smoke check, the probes) ---------------------


def host_profiles(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The host side's profiles of a deployed stack (``profiles.host``)."""
    return dict((outputs.get("profiles") or {}).get("host") or {})


def identity_of(outputs: Mapping[str, Any], identity: str | None) -> str:
    """``identity``, else the host profiles' default (the writer)."""
    return identity or str(host_profiles(outputs).get("identity") or "writer")


def profile(outputs: Mapping[str, Any], key: str, identity: str | None = None) -> Any:
    """One host profile (an engine's, a service's ``ClientProfile.key``) with the identity's credentials filled."""
    found = host_profiles(outputs).get(key)
    if found is None:
        raise KeyError(f"profiles.host.{key} is missing from the stack outputs")
    return fill(found, outputs.get("credentials") or {}, identity_of(outputs, identity))


def certificate_file(outputs: Mapping[str, Any], name: str) -> str:
    """A file holding the platform's certificate ``name`` (content-addressed, so a renewed one is a new file)."""
    pem = (outputs.get("certificates") or {}).get(name)
    if not pem:
        raise KeyError(f"certificates.{name} is missing from the stack outputs")
    path = Path(tempfile.gettempdir()) / f"lakehouse-{name}-{hashlib.sha256(pem.encode()).hexdigest()[:12]}.pem"
    if not path.exists():
        path.write_text(pem)
    return str(path)


def catalog_uri(spec: PlatformSpec, side: Side) -> str:
    """REST URI clients use for the default catalog: through its gate if it has one."""
    return default_catalog(spec).url(spec, side)


def token_uri(spec: PlatformSpec, side: Side) -> str:
    """The default catalog's OAuth2 token endpoint (Iceberg REST's ``/v1/oauth/tokens`` under its REST path)."""
    return f"{catalog_uri(spec, side).rstrip('/')}/v1/oauth/tokens"


def s3_endpoint(spec: PlatformSpec, side: Side) -> str | None:
    """The lab store's S3 endpoint, or None on AWS (real S3)."""
    store = registry().provider(spec, STORE)
    return None if store is None else url(spec, store, "s3", side)


def warehouse(spec: PlatformSpec) -> str:
    return default_catalog(spec).role.warehouse(spec)


def client_secrets(spec: PlatformSpec, identity: str | None = None) -> dict[str, str]:
    """The default catalog's client properties for a platform process acting as ``identity`` (the writer
    identity unless named): secret values as ``secret(name)`` placeholders, the gate's bearer token when
    the catalog is gated. What the streaming writers (Connect's sink, the Flink job) and maintenance use.
    """
    catalog = default_catalog(spec)
    role = catalog.role
    props = dict(role.client_properties(ServiceContext(spec, catalog.name)))
    acting = identity or spec.governance.writer
    if role.principals is not None:
        props.update(role.principals.properties(acting, secret(role.principals.secret_name(acting)),
                                                token_uri(spec, Side.INTERNAL)))
    if catalog.gate:
        props["token"] = secret(f"catalog-token-{acting}")
    return props


def client_properties(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, str]:
    """The default catalog's REST client properties, secrets as ``{credential_name}`` for the client to fill.

    When the catalog is gated: ``token`` (the identity's catalog token), and the gate's token endpoint as
    ``oauth2-server-uri``, where Iceberg Java refreshes that token and where a client that uses
    ``credential`` (``<identity>:<catalog token>``) instead gets one."""
    catalog = default_catalog(spec)
    role = catalog.role
    props = role.client_properties(ServiceContext(spec, catalog.name))
    props = {k: SECRET_TOKEN.sub(lambda m: "{" + m.group(1).replace("-", "_") + "}", v) for k, v in props.items()}
    if role.principals is not None:  # the identity's own principal: {polaris_client_id}:{polaris_client_secret}
        props.update(role.principals.properties("{" + role.principals.id_key + "}",
                                                "{" + role.principals.secret_key + "}", token_uri(spec, side)))
    if catalog.gate:
        props["token"] = "{catalog_token}"  # noqa: S105 - a placeholder the client fills
        props["oauth2-server-uri"] = f"{catalog_uri(spec, side).rstrip('/')}{TOKEN_PATH}"
    return props


def pyiceberg(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, str]:
    """PyIceberg catalog properties for an identity (fill its placeholders)."""
    props = {"type": "rest", "uri": catalog_uri(spec, side), "warehouse": warehouse(spec),
             "s3.region": spec.storage.region, **client_properties(spec, side)}
    endpoint = s3_endpoint(spec, side)
    if endpoint:
        props.update({"s3.endpoint": endpoint, "s3.path-style-access": "true",
                      "s3.access-key-id": "{s3_access_key}", "s3.secret-access-key": "{s3_secret_key}"})
    return props


def spark(spec: PlatformSpec, side: Side = Side.EXTERNAL, catalog_name: str = "lab") -> dict[str, str]:
    """spark-defaults for an Iceberg REST catalog, including the cache setting the chapter warns about."""
    prefix = f"spark.sql.catalog.{catalog_name}"
    conf = {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": catalog_uri(spec, side),
        f"{prefix}.warehouse": warehouse(spec),
        f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{prefix}.client.region": spec.storage.region,
        f"{prefix}.cache-enabled": str(spec.catalog.spark_cache_enabled).lower(),
        f"{prefix}.cache.expiration-interval-ms": str(spec.catalog.spark_cache_expiration_ms),
        **{f"{prefix}.{k}": v for k, v in client_properties(spec, side).items()},
    }
    endpoint = s3_endpoint(spec, side)
    if endpoint:
        conf.update({f"{prefix}.s3.endpoint": endpoint, f"{prefix}.s3.path-style-access": "true",
                     f"{prefix}.s3.access-key-id": "{s3_access_key}",
                     f"{prefix}.s3.secret-access-key": "{s3_secret_key}"})
    return conf


def spark_minor(spec: PlatformSpec) -> str:
    return ".".join(spec.engines.spark.split(".")[:2])


def spark_packages(spec: PlatformSpec) -> list[str]:
    """Maven coordinates a Spark session needs (``spark.jars.packages``, or the jars fetched natively)."""
    return [f"org.apache.iceberg:iceberg-spark-runtime-{spark_minor(spec)}_2.13:{spec.engines.iceberg}",
            f"org.apache.iceberg:iceberg-aws-bundle:{spec.engines.iceberg}"]


def duckdb(spec: PlatformSpec, side: Side = Side.EXTERNAL, catalog_name: str = "lab") -> list[str]:
    """DuckDB statements attaching the catalog as one identity (fill its placeholders)."""
    endpoint = s3_endpoint(spec, side)
    statements = []
    if endpoint:
        host = endpoint.removeprefix("http://")
        statements.append(
            "CREATE OR REPLACE SECRET lakehouse_s3 (TYPE s3, KEY_ID '{s3_access_key}', SECRET '{s3_secret_key}', "
            f"REGION '{spec.storage.region}', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)"
        )
    if default_catalog(spec).gate:
        statements.append("CREATE OR REPLACE SECRET lakehouse_catalog (TYPE iceberg, TOKEN '{catalog_token}')")
        auth = "SECRET lakehouse_catalog"
    else:
        auth = "AUTHORIZATION_TYPE 'none'"
    statements.append(
        f"ATTACH '{warehouse(spec)}' AS {catalog_name} (TYPE iceberg, ENDPOINT '{catalog_uri(spec, side)}', "
        f"{auth}, READ_ONLY false)"  # a remote path would attach read-only; the identity decides what writes
    )
    return statements


def flink_sql(spec: PlatformSpec, side: Side = Side.INTERNAL, catalog_name: str = "lab") -> str:
    """Flink SQL DDL creating the Iceberg REST catalog (for jobs running next to the services)."""
    props = {"type": "iceberg", "catalog-type": "rest", "uri": catalog_uri(spec, side), "warehouse": warehouse(spec),
             "io-impl": "org.apache.iceberg.aws.s3.S3FileIO", "client.region": spec.storage.region,
             **client_properties(spec, side)}
    endpoint = s3_endpoint(spec, side)
    if endpoint:
        props.update({"s3.endpoint": endpoint, "s3.path-style-access": "true",
                      "s3.access-key-id": "{s3_access_key}", "s3.secret-access-key": "{s3_secret_key}"})
    body = ",\n  ".join(f"'{k}' = '{v}'" for k, v in props.items())
    return f"CREATE CATALOG {catalog_name} WITH (\n  {body}\n)"
