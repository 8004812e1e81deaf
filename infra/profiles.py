"""Engine connection profiles for both sides of the network.

Host-side clients (Spark, PyIceberg, DuckDB, the Trino client) get external addresses; engines
running next to the services (Trino's catalog files, Flink's catalog DDL) get internal ones. Where
a catalog authenticates clients (Polaris), the profile names the credential by placeholder:
profiles hold no secret; values are in the ``credentials`` secret output, under the names the
profiles reference (``s3_access_key``, ``s3_secret_key``, ``polaris_root_secret``, ...).
"""

from __future__ import annotations

from typing import Any

from infra.services import ServiceContext, registry
from infra.services import trino as trino_service
from infra.services.base import SECRET_TOKEN, CatalogRole, Side, address, url
from infra.spec import PlatformSpec, Target


def catalog_role(spec: PlatformSpec, catalog: str | None = None) -> CatalogRole:
    """The role of a catalog service (the stack's default catalog unless named)."""
    role = registry()[catalog or spec.catalog.default].catalog
    assert role is not None, f"{catalog} is not a catalog"
    return role


def catalog_uri(spec: PlatformSpec, side: Side, catalog: str | None = None) -> str:
    """REST URI of a catalog (the stack's default catalog unless named)."""
    catalog = catalog or spec.catalog.default
    return url(spec, catalog, "http", side, catalog_role(spec, catalog).path)


def s3_endpoint(spec: PlatformSpec, side: Side) -> str | None:
    """The lab store's S3 endpoint, or None on AWS (real S3)."""
    if "seaweedfs" not in spec.enabled_services():
        return None
    return url(spec, "seaweedfs", "s3", side)


def warehouse(spec: PlatformSpec) -> str:
    return catalog_role(spec).warehouse(spec)


def client_properties(spec: PlatformSpec) -> dict[str, str]:
    """The default catalog's REST client properties, secrets as ``{credential_name}`` for the client to fill."""
    props = catalog_role(spec).client_properties(ServiceContext(spec, spec.catalog.default))
    return {k: SECRET_TOKEN.sub(lambda m: "{" + m.group(1).replace("-", "_") + "}", v) for k, v in props.items()}


def pyiceberg(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, str]:
    """PyIceberg catalog properties (credentials: add s3.access-key-id / s3.secret-access-key)."""
    props = {"type": "rest", "uri": catalog_uri(spec, side), "warehouse": warehouse(spec),
             "s3.region": spec.storage.region, **client_properties(spec)}
    endpoint = s3_endpoint(spec, side)
    if endpoint:
        props.update({"s3.endpoint": endpoint, "s3.path-style-access": "true"})
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
        **{f"{prefix}.{k}": v for k, v in client_properties(spec).items()},
    }
    endpoint = s3_endpoint(spec, side)
    if endpoint:
        conf.update({f"{prefix}.s3.endpoint": endpoint, f"{prefix}.s3.path-style-access": "true"})
    return conf


def spark_minor(spec: PlatformSpec) -> str:
    return ".".join(spec.engines.spark.split(".")[:2])


def spark_packages(spec: PlatformSpec) -> list[str]:
    """Maven coordinates a Spark session needs (``spark.jars.packages``, or the jars fetched natively)."""
    return [f"org.apache.iceberg:iceberg-spark-runtime-{spark_minor(spec)}_2.13:{spec.engines.iceberg}",
            f"org.apache.iceberg:iceberg-aws-bundle:{spec.engines.iceberg}"]


def duckdb(spec: PlatformSpec, side: Side = Side.EXTERNAL, catalog_name: str = "lab") -> list[str]:
    """DuckDB statements attaching the catalog; ``{s3_access_key}``/``{s3_secret_key}`` are filled by the client."""
    endpoint = s3_endpoint(spec, side)
    statements = []
    if endpoint:
        host = endpoint.removeprefix("http://")
        statements.append(
            "CREATE OR REPLACE SECRET lakehouse_s3 (TYPE s3, KEY_ID '{s3_access_key}', SECRET '{s3_secret_key}', "
            f"REGION '{spec.storage.region}', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)"
        )
    statements.append(
        f"ATTACH '{warehouse(spec)}' AS {catalog_name} (TYPE iceberg, ENDPOINT '{catalog_uri(spec, side)}', "
        "AUTHORIZATION_TYPE 'none', READ_ONLY false)"  # a remote path would attach read-only
    )
    return statements


def flink_sql(spec: PlatformSpec, side: Side = Side.INTERNAL, catalog_name: str = "lab") -> str:
    """Flink SQL DDL creating the Iceberg REST catalog (for jobs running next to the services)."""
    props = {"type": "iceberg", "catalog-type": "rest", "uri": catalog_uri(spec, side), "warehouse": warehouse(spec),
             "io-impl": "org.apache.iceberg.aws.s3.S3FileIO", "client.region": spec.storage.region,
             **client_properties(spec)}
    endpoint = s3_endpoint(spec, side)
    if endpoint:
        props.update({"s3.endpoint": endpoint, "s3.path-style-access": "true"})
    body = ",\n  ".join(f"'{k}' = '{v}'" for k, v in props.items())
    return f"CREATE CATALOG {catalog_name} WITH (\n  {body}\n)"


def flink(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, Any]:
    """Where Flink's REST API is from one side (submit, status, cancel), and what its streaming job does."""
    from infra.services import flink as flink_service

    summary = flink_service.job_summary(spec, side)
    if spec.target is Target.AWS:
        summary.pop("rest")
        return {"managed": flink_service.MSF, "job": summary}
    return {"rest": summary.pop("rest"), "job": summary}


def trino_client(spec: PlatformSpec, side: Side = Side.EXTERNAL) -> dict[str, Any]:
    """Where a Trino client connects, and the catalog names it can use."""
    host, port = url(spec, "trino", "http", side).removeprefix("http://").rsplit(":", 1)
    catalogs = [d.catalog.engine_name for name, d in registry().catalogs().items()
                if d.catalog is not None and name in spec.enabled_services()]
    return {"host": host, "port": int(port), "user": "lakehouse", "catalogs": catalogs}


def all_profiles(spec: PlatformSpec) -> dict[str, Any]:
    """Every profile, host side and service side, as one stack output."""
    enabled = spec.enabled_services()
    host: dict[str, Any] = {"pyiceberg": pyiceberg(spec), "spark": spark(spec), "spark_packages": spark_packages(spec),
                            "duckdb": duckdb(spec)}
    services: dict[str, Any] = {}
    if "trino" in enabled:
        host["trino"] = trino_client(spec)
        services["trino_catalogs"] = trino_service.catalog_files(ServiceContext(spec, "trino"), Side.INTERNAL)
    if "flink-jobmanager" in enabled:
        host["flink"] = flink(spec, Side.EXTERNAL)
        services["flink"] = flink(spec, Side.INTERNAL)
        services["flink_sql"] = flink_sql(spec)
    if "kafka" in enabled:
        # Two listeners: PLAINTEXT for the platform's services, HOST for clients on the host.
        host["kafka"] = {"bootstrap.servers": address(spec, "kafka", "host", Side.EXTERNAL)}
        services["kafka"] = {"bootstrap.servers": address(spec, "kafka", "broker", Side.INTERNAL)}
    if "kafka-connect" in enabled:
        host["kafka_connect"] = {"url": url(spec, "kafka-connect", "rest", Side.EXTERNAL)}
        services["kafka_connect"] = {"url": url(spec, "kafka-connect", "rest", Side.INTERNAL)}
    profiles: dict[str, Any] = {"host": host, "services": services}
    if spec.target is Target.NATIVE:
        profiles["note"] = "127.0.0.1 on both sides (local processes)"
    return profiles
