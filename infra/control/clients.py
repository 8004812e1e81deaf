"""Host-side clients of a deployed stack, acting as one identity: built from its outputs, nothing else.

``outputs`` is the stack's outputs (``python -m infra.control outputs``, ``infra.control.workspace.outputs``):
the profiles say where and how, ``credentials.identities.<identity>`` holds what the identity presents,
``certificates`` what TLS is verified against. The default identity is the one the host profiles name
(``profiles.host.identity``, the writer); the platform's own jobs (maintenance) act as ``platform``.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

from infra.services.profiles import fill


def host_profiles(outputs: dict[str, Any]) -> dict[str, Any]:
    return (outputs.get("profiles") or {}).get("host") or {}


def identity_of(outputs: dict[str, Any], identity: str | None) -> str:
    """``identity``, else the host profiles' default (the writer)."""
    return identity or str(host_profiles(outputs).get("identity") or "writer")


def profile(outputs: dict[str, Any], engine: str, identity: str | None = None) -> Any:
    """One engine's host profile with the identity's credentials filled in."""
    found = host_profiles(outputs).get(engine)
    if found is None:
        raise KeyError(f"profiles.host.{engine} is missing from the stack outputs")
    return fill(found, outputs.get("credentials") or {}, identity_of(outputs, identity))


def pyiceberg_catalog(outputs: dict[str, Any], identity: str | None = None, name: str = "lab", **overrides: str) -> Any:
    """A PyIceberg REST catalog acting as ``identity``."""
    from pyiceberg.catalog import load_catalog

    return load_catalog(name, **{**profile(outputs, "pyiceberg", identity), **overrides})


def certificate_file(outputs: dict[str, Any], name: str) -> str:
    """A file holding the platform's certificate ``name`` (content-addressed, so a renewed one is a new file)."""
    pem = (outputs.get("certificates") or {}).get(name)
    if not pem:
        raise KeyError(f"certificates.{name} is missing from the stack outputs")
    path = Path(tempfile.gettempdir()) / f"lakehouse-{name}-{hashlib.sha256(pem.encode()).hexdigest()[:12]}.pem"
    if not path.exists():
        path.write_text(pem)
    return str(path)


def trino_connection(outputs: dict[str, Any], identity: str | None = None, catalog: str | None = None,
                     user: str | None = None, password: str | None = None, request_timeout: float = 120) -> Any:
    """A Trino DB-API connection over HTTPS as ``identity`` (its user and password), verified against the
    platform's certificate; ``user``/``password`` override the identity's (to prove refusals)."""
    import requests
    import trino

    who = identity_of(outputs, identity)
    filled = profile(outputs, "trino", who)
    session = requests.Session()
    # REQUESTS_CA_BUNDLE in the environment would override verify= (requests merges the environment last):
    # this session trusts exactly the platform's certificate.
    session.trust_env = False
    session.verify = certificate_file(outputs, filled["certificate"])
    user = user or filled["user"]
    auth = trino.auth.BasicAuthentication(user, filled["password"] if password is None else password)
    reachable = (filled.get("catalogs_by_identity") or {}).get(who) or filled.get("catalogs") or [None]
    return trino.dbapi.connect(host=filled["host"], port=int(filled["port"]), user=user, auth=auth,
                               http_scheme="https", http_session=session, catalog=catalog or reachable[0],
                               request_timeout=request_timeout)


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
