"""Host-side clients of a deployed stack, acting as one identity: built from its outputs, nothing else.

``outputs`` is the stack's outputs (``lakehouse outputs``,
``lakehouse_platform.control.workspace.outputs``):
the profiles say where and how, ``credentials.identities.<identity>`` holds what the identity presents,
``certificates`` what TLS is verified against. The default identity is the one the host profiles name
(``profiles.host.identity``, the writer); the platform's own jobs (maintenance) act as ``platform``.
"""

from __future__ import annotations

from typing import Any

# Reading a stack's profiles back is the profiles module's (a service's own client, e.g. Trino's, reads them too).
from lakehouse_platform.services.profiles import certificate_file, host_profiles, identity_of, profile

__all__ = ["certificate_file", "duckdb_connection", "host_profiles", "identity_of", "profile", "pyiceberg_catalog",
           "s3_client"]


def pyiceberg_catalog(outputs: dict[str, Any], identity: str | None = None, name: str = "lab", **overrides: str) -> Any:
    """A PyIceberg REST catalog acting as ``identity``."""
    from pyiceberg.catalog import load_catalog

    return load_catalog(name, **{**profile(outputs, "pyiceberg", identity), **overrides})


def duckdb_connection(outputs: dict[str, Any], identity: str | None = None) -> Any:
    """DuckDB with its extensions loaded from the package paths and the catalog attached as ``lab``."""
    import duckdb

    con = duckdb.connect()
    for statement in (outputs.get("native") or {}).get("duckdb_extensions") or []:
        con.execute(statement)
    for statement in profile(outputs, "duckdb", identity):
        con.execute(statement)
    return con


def s3_client(outputs: dict[str, Any], identity: str | None = None, retries: int = 3) -> Any:
    """A boto3 S3 client for the warehouse store, acting as ``identity``."""
    import boto3
    from botocore.config import Config

    props = profile(outputs, "pyiceberg", identity)
    kwargs: dict[str, Any] = {"region_name": props.get("s3.region", "us-east-1")}
    if props.get("s3.endpoint"):
        kwargs["endpoint_url"] = props["s3.endpoint"]
    if props.get("s3.access-key-id"):
        kwargs.update(aws_access_key_id=props["s3.access-key-id"], aws_secret_access_key=props["s3.secret-access-key"])
    style = "path" if props.get("s3.path-style-access") == "true" else "auto"
    return boto3.client("s3", config=Config(s3={"addressing_style": style},
                                            retries={"max_attempts": retries, "mode": "standard"},
                                            max_pool_connections=32), **kwargs)
