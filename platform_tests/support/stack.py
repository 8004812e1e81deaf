"""The deployed stack as the probes see it: its outputs, and clients built from them.

Everything a probe reaches (endpoints, credentials, profiles, pids) comes from the stack outputs:
``pulumi stack output --json --show-secrets --stack X`` or an outputs JSON file. Nothing here knows
a port or a password of its own.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


class OutputsError(RuntimeError):
    """The stack outputs could not be read; the message says how to get them."""


def read_stack_outputs(stack: str) -> dict[str, Any]:
    """The stack's outputs, secrets shown, through the project's Automation API workspace."""
    from pulumi import automation as auto

    from infra.stack.workspace import outputs

    try:
        found = outputs(stack)
    except auto.CommandError as exc:
        raise OutputsError(f"pulumi stack output --stack {stack} failed: {str(exc).strip()[-800:]}\n"
                           "deploy first (make up), or pass --outputs <file>") from None
    if not found:
        raise OutputsError(f"stack {stack} has no outputs: deploy it first (make up), or pass --outputs <file>")
    return found


def read_outputs_file(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise OutputsError(f"cannot read outputs file {path}: {exc}") from None


@dataclass
class Stack:
    """The stack outputs plus the helpers every probe needs."""

    outputs: dict[str, Any]
    name: str | None = None  # the Pulumi stack name, when read through the CLI
    run_id: str = ""
    notes: list[str] = field(default_factory=list)
    loader: Any = None  # re-reads the outputs (after a restart, pids change)

    def reload(self) -> None:
        if self.loader is not None:
            self.outputs = self.loader()

    # ------------------------------------------------------------------ raw outputs
    @property
    def target(self) -> str:
        return str(self.outputs.get("target", "?"))

    @property
    def native(self) -> dict[str, Any]:
        return self.outputs.get("native") or {}

    @property
    def credentials(self) -> dict[str, str]:
        return self.outputs.get("credentials") or {}

    @property
    def host_profiles(self) -> dict[str, Any]:
        return (self.outputs.get("profiles") or {}).get("host") or {}

    @property
    def version_manifest(self) -> dict[str, str]:
        return self.outputs.get("version_manifest") or {}

    def down_means(self, layer: str) -> str:
        """What the layer being down means for everyone else (``layers``, else ``ownership``)."""
        contract = (self.outputs.get("layers") or {}).get(layer) or {}
        if contract.get("down_means"):
            return contract["down_means"]
        for row in self.outputs.get("ownership") or []:
            if row.get("layer") == layer:
                return row.get("down_means", "")
        return "(no contract for this layer in the stack outputs)"

    def owner(self, layer: str) -> str:
        contract = (self.outputs.get("layers") or {}).get(layer) or {}
        return contract.get("owner") or next(
            (r.get("owner", "?") for r in self.outputs.get("ownership") or [] if r.get("layer") == layer), "?")

    def endpoint(self, service: str, port: str) -> str | None:
        """``host:port`` of a service port as a host-side client reaches it (external, else internal)."""
        entry = ((self.outputs.get("endpoints") or {}).get(service) or {}).get(port) or {}
        return entry.get("external") or entry.get("internal")

    def service_record(self, service: str) -> dict[str, Any]:
        return (self.native.get("services") or {}).get(service) or {}

    @property
    def warehouse(self) -> str:
        return self.host_profiles.get("pyiceberg", {}).get("warehouse", "")

    @property
    def bucket(self) -> str:
        """The warehouse bucket: ``s3://<bucket>/...`` of the catalog's warehouse (else layers.storage)."""
        wh = self.warehouse
        if wh.startswith("s3://"):
            return wh.removeprefix("s3://").split("/", 1)[0]
        storage = (self.outputs.get("layers") or {}).get("storage") or {}
        return storage.get("bucket") or storage.get("bucket_name") or "warehouse"

    @property
    def warehouse_prefixes(self) -> list[str]:
        storage = (self.outputs.get("layers") or {}).get("storage") or {}
        prefixes = storage.get("warehouse_prefixes")
        if prefixes:
            return list(prefixes)
        wh = self.warehouse
        if wh.startswith("s3://"):
            return [wh.removeprefix("s3://").split("/", 1)[1] if "/" in wh.removeprefix("s3://") else ""]
        return [""]

    # ------------------------------------------------------------------ clients
    def pyiceberg_props(self) -> dict[str, str]:
        props = dict(self.host_profiles.get("pyiceberg") or {})
        if not props:
            raise OutputsError("profiles.host.pyiceberg is missing from the stack outputs")
        creds = self.credentials
        if "s3_access_key" in creds:
            props["s3.access-key-id"] = creds["s3_access_key"]
            props["s3.secret-access-key"] = creds["s3_secret_key"]
        return props

    def catalog(self, name: str = "lab", **overrides: str):
        """A PyIceberg REST catalog from the host profile and the credentials."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(name, **{**self.pyiceberg_props(), **overrides})

    def s3(self, retries: int = 3):
        """A boto3 S3 client for the warehouse store (path style on the lab store)."""
        import boto3
        from botocore.config import Config

        props = self.host_profiles.get("pyiceberg") or {}
        endpoint = props.get("s3.endpoint")
        creds = self.credentials
        kwargs: dict[str, Any] = {"region_name": props.get("s3.region", "us-east-1")}
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        if "s3_access_key" in creds:
            kwargs.update(aws_access_key_id=creds["s3_access_key"], aws_secret_access_key=creds["s3_secret_key"])
        style = "path" if props.get("s3.path-style-access") == "true" else "auto"
        return boto3.client("s3", config=Config(s3={"addressing_style": style},
                                                retries={"max_attempts": retries, "mode": "standard"},
                                                max_pool_connections=32), **kwargs)

    def duckdb_statements(self, read_only: bool | None = None) -> list[str]:
        """Extension LOADs (package paths, no download) then the profile's SECRET/ATTACH with credentials."""
        statements = list(self.native.get("duckdb_extensions") or [])
        if not statements:
            from infra.artifacts.clients import duckdb_extensions

            statements = duckdb_extensions().load_statements()
        creds = self.credentials
        for template in self.host_profiles.get("duckdb") or []:
            statements.append(template.format(s3_access_key=creds.get("s3_access_key", ""),
                                              s3_secret_key=creds.get("s3_secret_key", "")))
        return statements

    def trino_connection(self, catalog: str | None = None):
        import trino

        profile = self.host_profiles.get("trino")
        if not profile:
            raise OutputsError("profiles.host.trino is missing: this stack runs no Trino")
        return trino.dbapi.connect(host=profile["host"], port=int(profile["port"]), user=profile.get("user", "probe"),
                                   catalog=catalog or profile["catalogs"][0], request_timeout=120)

    @property
    def trino_catalog(self) -> str:
        return (self.host_profiles.get("trino") or {}).get("catalogs", ["fixture"])[0]

    def java_home(self) -> str | None:
        if self.native.get("java_home"):
            return self.native["java_home"]
        if os.environ.get("JAVA_HOME"):
            return os.environ["JAVA_HOME"]
        try:
            from infra.artifacts.java import JAVA_FOR_JVM_SERVICES, find_java

            return str(find_java(JAVA_FOR_JVM_SERVICES))
        except Exception:  # noqa: BLE001 - any failure means "not found"
            return None

    def spark_jars(self) -> list[str]:
        jars = list(self.native.get("spark_jars") or [])
        if not jars:
            raise OutputsError("native.spark_jars is missing from the stack outputs: Spark needs the Iceberg runtime "
                               "jars the native target resolved (make artifacts)")
        return jars


def layer_failure(stack: Stack, layer: str, what: str, evidence: Any) -> str:
    """The one shape of every failure message: the layer, what down means, the evidence."""
    if not isinstance(evidence, str):
        evidence = json.dumps(evidence, indent=2, default=str)
    return (f"[{layer}] {what}\n"
            f"  layer owner: {stack.owner(layer)}\n"
            f"  {layer} down means: {stack.down_means(layer)}\n"
            f"  evidence: {evidence}")


def fail(stack: Stack, layer: str, what: str, evidence: Any) -> None:
    pytest.fail(layer_failure(stack, layer, what, evidence), pytrace=False)
