"""The deployed stack as the probes see it: its outputs, and clients built from them.

Everything a probe reaches (endpoints, credentials, profiles, pids, containers) comes from the stack outputs:
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


class OutputsError(RuntimeError):
    """The stack outputs could not be read; the message says how to get them."""


def read_stack_outputs(stack: str) -> dict[str, Any]:
    """The stack's outputs, secrets shown, through the project's Automation API workspace."""
    from pulumi import automation as auto

    from lakehouse_platform.control.workspace import outputs

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
    def clients(self) -> dict[str, Any]:
        """What the engines on this host load, on every target where they run here (``clients``)."""
        return self.outputs.get("clients") or {}

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
        """``host:port`` of a service port as a host-side client reaches it: its external address (natively the
        internal one is on 127.0.0.1 too). None where the host cannot reach it (a lab port that is not published:
        the internal name resolves only on the lab's network)."""
        entry = ((self.outputs.get("endpoints") or {}).get(service) or {}).get(port) or {}
        return entry.get("external") or (entry.get("internal") if self.target == "native" else None)

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

    # ------------------------------------------------------------------ identities
    @property
    def identity(self) -> str:
        """The identity the host profiles hand to engines that write (``profiles.host.identity``)."""
        return str(self.host_profiles.get("identity") or "writer")

    @property
    def reader_identity(self) -> str:
        return str(self.host_profiles.get("reader_identity") or "reader")

    @property
    def platform_identity(self) -> str | None:
        """The platform's own identity (role platform): what the platform's checks of itself act as."""
        for name, creds in (self.credentials.get("identities") or {}).items():
            if creds.get("role") == "platform":
                return str(name)
        return None

    def creds_of(self, identity: str | None = None) -> dict[str, Any]:
        """What a client acting as ``identity`` holds (``credentials.identities.<name>``)."""
        found = (self.credentials.get("identities") or {}).get(identity or self.identity)
        if found is None:
            raise OutputsError(f"credentials.identities has no {identity or self.identity!r}; "
                               f"known: {', '.join(self.credentials.get('identities') or {}) or 'none'}")
        return dict(found)

    def fill(self, profile: Any, identity: str | None = None) -> Any:
        """A profile with an identity's placeholders filled (``lakehouse_platform.profiles.fill``)."""
        from lakehouse_platform.services.profiles import fill

        return fill(profile, self.credentials, identity or self.identity)

    # ------------------------------------------------------------------ clients
    def pyiceberg_props(self, identity: str | None = None) -> dict[str, str]:
        props = dict(self.host_profiles.get("pyiceberg") or {})
        if not props:
            raise OutputsError("profiles.host.pyiceberg is missing from the stack outputs")
        return self.fill(props, identity)

    def catalog(self, name: str = "lab", identity: str | None = None, **overrides: str):
        """A PyIceberg REST catalog from the host profile, acting as ``identity`` (default: the profile's)."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(name, **{**self.pyiceberg_props(identity), **overrides})

    def catalog_headers(self, identity: str | None = None) -> dict[str, str]:
        """The Authorization header of an identity for raw REST calls (none when the catalog needs none)."""
        token = self.pyiceberg_props(identity).get("token")
        return {"Authorization": f"Bearer {token}"} if token else {}

    def s3(self, retries: int = 3, identity: str | None = None):
        """A boto3 S3 client for the warehouse store (path style on the lab store), acting as ``identity``."""
        import boto3
        from botocore.config import Config

        props = self.pyiceberg_props(identity)
        endpoint = props.get("s3.endpoint")
        kwargs: dict[str, Any] = {"region_name": props.get("s3.region", "us-east-1")}
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        if props.get("s3.access-key-id"):
            kwargs.update(aws_access_key_id=props["s3.access-key-id"],
                          aws_secret_access_key=props["s3.secret-access-key"])
        style = "path" if props.get("s3.path-style-access") == "true" else "auto"
        return boto3.client("s3", config=Config(s3={"addressing_style": style},
                                                retries={"max_attempts": retries, "mode": "standard"},
                                                max_pool_connections=32), **kwargs)

    def duckdb_statements(self, read_only: bool | None = None, identity: str | None = None) -> list[str]:
        """Extension LOADs (package paths, no download) then the profile's SECRET/ATTACH as ``identity``."""
        statements = list(self.clients.get("duckdb_extensions") or self.native.get("duckdb_extensions") or [])
        if not statements:
            from lakehouse_platform.artifacts.clients import duckdb_extensions

            statements = duckdb_extensions().load_statements()
        return statements + list(self.fill(list(self.host_profiles.get("duckdb") or []), identity))

    def certificate_file(self, name: str) -> str:
        """A file holding the certificate ``name`` from the ``certificates`` output (to verify TLS against)."""
        from lakehouse_platform.control import clients

        return clients.certificate_file(self.outputs, name)

    def java_home(self) -> str | None:
        if self.native.get("java_home"):
            return self.native["java_home"]
        if os.environ.get("JAVA_HOME"):
            return os.environ["JAVA_HOME"]
        try:
            from lakehouse_platform.artifacts.java import JAVA_FOR_JVM_SERVICES, find_java

            return str(find_java(JAVA_FOR_JVM_SERVICES))
        except Exception:  # noqa: BLE001 - any failure means "not found"
            return None

    def spark_jars(self) -> list[str]:
        jars = list(self.clients.get("spark_jars") or self.native.get("spark_jars") or [])
        if not jars:
            raise OutputsError("clients.spark_jars is missing from the stack outputs: Spark needs the Iceberg runtime "
                               "jars the target resolved for this host (make artifacts STACK=<stack>)")
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
