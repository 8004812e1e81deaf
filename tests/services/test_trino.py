"""Trino: its password file (Trino's own PBKDF2 check) and access rules per identity, HTTPS with the platform's certificate
on docker, the coordinator and workers on ECS, the catalog properties a declared table may set."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import pytest

from infra.config import load_platform
from infra.operations import tables
from infra.services import ServiceContext
from infra.services.secrets import pbkdf2_hash
from infra.services.trino import config as trino
from tests.support.aws_graph import TASK, ecs_service, named
from tests.support.harness import ProgramRun
from tests.support.rendered import uploads
from tests.support.stacks import native_spec, stack_platform

# -- the password file and the access rules ------------------------------------------------------------------


def trino_verifies(password: str, stored: str) -> bool:
    """Trino's check of a PBKDF2 password-file entry (EncryptionUtil.doesPBKDF2PasswordMatch): SHA-1 HMAC,
    ``iterations:salt-hex:hash-hex``, at least 1000 iterations."""
    iterations, salt, digest = stored.split(":")
    assert int(iterations) >= 1000 and salt == salt.lower() and digest == digest.lower()
    derived = hashlib.pbkdf2_hmac("sha1", password.encode(), bytes.fromhex(salt), int(iterations),
                                  dklen=len(bytes.fromhex(digest)))
    return derived == bytes.fromhex(digest)


def test_password_file_hashes_are_trinos_pbkdf2_and_stable():
    first = pbkdf2_hash("trino-password-reader", "s3cret")
    assert first == pbkdf2_hash("trino-password-reader", "s3cret"), "stable: an unchanged password restarts nothing"
    assert first != pbkdf2_hash("trino-password-writer", "s3cret"), "two users with one password hash differently"
    assert trino_verifies("s3cret", first) and not trino_verifies("wrong", first)
    assert trino.password_file(native_spec()) == "".join(
        f"{name}:${{pbkdf2:trino-password-{name}}}\n" for name in ("platform", "writer", "reader"))


def test_readers_reach_only_the_read_only_catalog_and_its_credentials_cannot_write():
    spec = native_spec()
    assert trino.catalogs(spec) == {"fixture": ("rest-fixture", "writer"), "fixture_ro": ("rest-fixture", "reader")}
    assert trino.access_rules(spec) == {"catalogs": [
        {"user": "platform|writer", "catalog": "fixture", "allow": "all"},
        {"user": "reader", "catalog": "fixture_ro", "allow": "read-only"},
        {"catalog": "system", "allow": "read-only"},
    ]}

    files = trino.catalog_files(ServiceContext(spec, "trino"))
    assert "oauth2.token=${ENV:CATALOG_TOKEN_READER}" in files["fixture_ro.properties"]
    assert "s3.aws-secret-key=${ENV:S3_SECRET_KEY_READER}" in files["fixture_ro.properties"]
    assert "READER" not in files["fixture.properties"]
    env = trino.secret_env(ServiceContext(spec, "trino"))
    assert env["S3_SECRET_KEY_READER"] == "${secret:s3-secret-key-reader}"
    assert env["S3_ACCESS_KEY_READER"] == "reader-access-key"
    assert "S3_SECRET_KEY" not in env, "no engine gets the platform's admin key"


def test_trino_renders_each_catalogs_neutral_rest_properties_and_refuses_one_it_cannot() -> None:
    """A catalog gives its REST client properties in the one neutral form (CatalogRole.client_properties); Trino
    renders them into its own names, its secrets as environment references that secret_env fills."""
    spec = load_platform(stack_platform("cloud"))
    files = trino.catalog_files(ServiceContext(spec, "trino"))
    polaris = dict(line.split("=", 1) for line in files["polaris.properties"].splitlines())
    assert {k: v for k, v in polaris.items() if k.startswith("iceberg.rest-catalog.")
            and k not in ("iceberg.rest-catalog.uri", "iceberg.rest-catalog.warehouse")} == {
        "iceberg.rest-catalog.security": "OAUTH2",
        "iceberg.rest-catalog.oauth2.credential": "root:${ENV:POLARIS_ROOT_SECRET}",
        "iceberg.rest-catalog.oauth2.scope": "PRINCIPAL_ROLE:ALL",
        "iceberg.rest-catalog.vended-credentials-enabled": "true",
    }
    assert "iceberg.rest-catalog.vended-credentials-enabled=true" in files["lakekeeper.properties"]
    assert trino.secret_env(ServiceContext(spec, "trino"))["POLARIS_ROOT_SECRET"] == "${secret:polaris-root-secret}"
    with pytest.raises(ValueError) as refused:
        trino.rest_properties("made-up", {"scope": "x", "rest-metrics-reporting-enabled": "false"})
    assert str(refused.value).startswith("services.made-up: Trino has no catalog property for the REST client "
                                         "property rest-metrics-reporting-enabled='false'")


def test_each_identity_holds_a_trino_password_declared_by_the_trino_package() -> None:
    """The per-identity secret is Trino's declaration (IdentitySecret), not a case in the secrets module: its config
    key, its lab default and where clients find it follow from it."""
    from infra.services import registry

    declaring, item = registry().identity_secrets()["trino-password"]
    assert (declaring, item.secret_name("reader"), item.credentials_key, item.lab_default("reader")) == (
        "trino", "trino-password-reader", "trino_password", "lab-reader-trino-password")
    assert item.values is not None and item.values("reader") == {"trino_user": "reader"}


def test_trino_may_set_the_properties_a_declared_table_carries() -> None:
    from infra.services import ServiceContext
    from infra.services.trino import config as trino

    platform = stack_platform("cloud")
    platform["tables"] = [{"namespace": "shop", "name": "orders", "owner": "o", "freshness_minutes": 5,
                           "columns": [{"name": "id", "type": "long"}], "properties": {"comment": "c"}}]
    files = trino.catalog_files(ServiceContext(load_platform(platform), "trino"))
    (line,) = [x for x in files["polaris.properties"].splitlines() if x.startswith("iceberg.allowed-extra-properties")]
    assert line.split("=", 1)[1].split(",") == [*tables.PROPERTY_KEYS, "comment"]


# -- docker, under Pulumi mocks ------------------------------------------------------------------------------


def test_lab_trino_serves_https_with_the_platform_certificate(lab):
    files = uploads(lab, "trino")
    config = files["/etc/trino/config.properties"]
    assert "http-server.authentication.type=PASSWORD\n" in config
    assert "http-server.authentication.allow-insecure-over-http=false\n" in config
    assert "http-server.https.keystore.path=/etc/trino/tls/trino.pem\n" in config
    assert files["/etc/trino/tls/trino.pem"].startswith("-----BEGIN")  # the issued key and certificate
    assert files["/etc/trino/password.db"].count(":") == 3 * 3  # three users, iterations:salt:hash each
    published = lab.outputs["certificates"]["trino-tls"]
    assert published.startswith("-----BEGIN CERTIFICATE") and "PRIVATE KEY" not in published  # the key stays secret
    certificate = lab.named("book2-trino-tls")
    assert certificate.inputs["hosts"] == ["trino", "127.0.0.1", "localhost"]
    assert certificate.parent == "book2-governance"


# -- aws, under Pulumi mocks ---------------------------------------------------------------------------------


def test_trino_workers_follow_config(cloud: ProgramRun, five_workers_no_spark: ProgramRun) -> None:
    assert ecs_service(cloud, "trino-worker").inputs["desiredCount"] == 3
    assert ecs_service(five_workers_no_spark, "trino-worker").inputs["desiredCount"] == 5
    for run in (cloud, five_workers_no_spark):
        coordinator = ecs_service(run, "trino").inputs
        assert coordinator["desiredCount"] == 1
        assert coordinator["serviceRegistries"]["registryArn"].endswith("lakehouse-trino-dns")
    worker = named(cloud, TASK, "lakehouse-trino-worker").inputs
    assert (worker["cpu"], worker["memory"]) == ("2048", "8192")
    (definition,) = json.loads(worker["containerDefinitions"])
    assert "discovery.uri=http://trino.lakehouse.internal:8080" in _written_files(definition)
    assert cloud.outputs["trino_url"] == "http://trino.lakehouse.internal:8080"


def _written_files(container: dict[str, Any]) -> str:

    script = container["command"][0]
    return "".join(base64.b64decode(b).decode() for b in re.findall(r"echo ([A-Za-z0-9+/=]+) \| base64 -d", script))


def test_trino_catalog_files_are_the_shared_ones(cloud: ProgramRun) -> None:
    (definition,) = json.loads(named(cloud, TASK, "lakehouse-trino").inputs["containerDefinitions"])
    files = _written_files(definition)
    for body in cloud.outputs["profiles"]["services"]["trino_catalogs"].values():
        assert body in files
    assert "iceberg.rest-catalog.uri=http://polaris.lakehouse.internal:8181/api/catalog" in files
    assert "node-scheduler.include-coordinator=false" in files
