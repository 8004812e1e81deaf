"""Trino: its password file (Trino's own PBKDF2 check) and access rules per identity, HTTPS with the platform's certificate
on docker, the coordinator and workers on ECS, the catalog properties a declared table may set, the declared tables on
aws (a deployment step through Trino, its script run for real against a stand-in Trino CLI)."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.runtime import tables
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.secrets import pbkdf2_hash
from lakehouse_platform.services.trino import aws as trino_aws
from lakehouse_platform.services.trino import config as trino
from tests.support.aws_graph import TASK, ecs_service, named
from tests.support.harness import ProgramRun
from tests.support.rendered import uploads
from tests.support.stacks import cloud_with_tables_platform, native_spec, stack_platform

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


def test_each_identity_reaches_only_its_own_catalog_whose_credentials_are_its_own():
    spec = native_spec()
    # The platform's identity has no catalog of its own (no engine holds the store's admin key): the writer's.
    assert trino.catalogs(spec) == {"fixture": ("rest-fixture", "writer"), "fixture_ro": ("rest-fixture", "reader")}
    assert trino.catalogs_of_users(spec) == {"platform": ["fixture"], "writer": ["fixture"], "reader": ["fixture_ro"]}
    everything = ["SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP"]
    assert trino.access_rules(spec) == {
        "catalogs": [{"user": "platform", "catalog": "fixture", "allow": "all"},
                     {"user": "writer", "catalog": "fixture", "allow": "all"},
                     {"user": "reader", "catalog": "fixture_ro", "allow": "read-only"},
                     {"catalog": "system", "allow": "read-only"}],
        "schemas": [{"user": user, "catalog": catalog, "schema": schema, "owner": owner}
                    for user, catalog, owner in (("platform", "fixture", True), ("writer", "fixture", True),
                                                 ("reader", "fixture_ro", False))
                    for schema in (r"shop(\..*)?", ".*")],
        "tables": [{"user": user, "catalog": catalog, "schema": schema, "privileges": privileges}
                   for user, catalog, privileges in (("platform", "fixture", everything),
                                                     ("writer", "fixture", everything),
                                                     ("reader", "fixture_ro", ["SELECT"]))
                   for schema in (r"shop(\..*)?", ".*")],
    }

    files = trino.catalog_files(ServiceContext(spec, "trino"))
    assert "oauth2.token=${ENV:CATALOG_TOKEN_READER}" in files["fixture_ro.properties"]
    assert "s3.aws-secret-key=${ENV:S3_SECRET_KEY_READER}" in files["fixture_ro.properties"]
    assert "READER" not in files["fixture.properties"]
    env = trino.secret_env(ServiceContext(spec, "trino"))
    assert env["S3_SECRET_KEY_READER"] == "${secret:s3-secret-key-reader}"
    assert env["S3_ACCESS_KEY_READER"] == "reader-access-key"
    assert not [k for k in env if k.startswith("S3_") and k.endswith(("_KEY", "_PLATFORM"))], \
        "no engine gets the platform's admin key"


def test_grants_per_namespace_become_trinos_schema_and_table_rules_known_namespaces_first():
    platform = stack_platform("native")
    platform["governance"] = {"namespaces": ["finance"]}
    platform["identities"] = {"etl": {"access_key": "etl-access-key", "actions": ["Read", "Write", "List"],
                                      "secret_config_key": "s3EtlSecretKey",
                                      "grants": {"shop": ["read", "write", "manage"], "finance": ["read"],
                                                 "*": ["read", "write"]}}}
    spec = load_platform(platform)
    rules = trino.access_rules(spec)
    mine = {section: [{k: v for k, v in rule.items() if k not in ("user", "catalog")} for rule in rules[section]
                      if rule.get("user") == "etl"] for section in rules}
    assert mine == {
        "catalogs": [{"allow": "all"}],
        "schemas": [{"schema": r"shop(\..*)?", "owner": True}, {"schema": r"finance(\..*)?", "owner": False},
                    {"schema": ".*", "owner": False}],
        "tables": [{"schema": r"shop(\..*)?", "privileges": ["SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP"]},
                   {"schema": r"finance(\..*)?", "privileges": ["SELECT"]},
                   {"schema": ".*", "privileges": ["SELECT", "INSERT", "DELETE", "UPDATE"]}],
    }
    assert [r["catalog"] for r in rules["catalogs"] if r.get("user") == "etl"] == ["fixture_etl"]
    files = trino.catalog_files(ServiceContext(spec, "trino"))
    assert "oauth2.token=${ENV:CATALOG_TOKEN_ETL}" in files["fixture_etl.properties"]
    assert trino.client_profile(spec)["catalogs_by_identity"]["etl"] == ["fixture_etl"]


def test_an_identity_whose_trino_catalog_would_be_anothers_is_refused():
    platform = stack_platform("native")
    platform["identities"] = {"ro": {"access_key": "ro-access-key", "actions": ["Read", "List"],
                                     "secret_config_key": "s3RoSecretKey"}}
    with pytest.raises(ConfigError) as info:
        load_platform(platform)
    assert info.value.errors == ["lakehouse:platform.identities.ro: its Trino catalog 'fixture_ro' would be the one "
                                 "of identities.reader; rename the identity"]


def test_trino_renders_each_catalogs_neutral_rest_properties_and_refuses_one_it_cannot() -> None:
    """A catalog gives its REST client properties in the one neutral form (CatalogRole.client_properties); Trino
    renders them into its own names, its secrets as environment references that secret_env fills."""
    spec = load_platform(stack_platform("cloud"))
    files = trino.catalog_files(ServiceContext(spec, "trino"))
    polaris = dict(line.split("=", 1) for line in files["polaris.properties"].splitlines())
    assert {k: v for k, v in polaris.items() if k.startswith("iceberg.rest-catalog.")
            and k not in ("iceberg.rest-catalog.uri", "iceberg.rest-catalog.warehouse")} == {
        "iceberg.rest-catalog.security": "OAUTH2",
        "iceberg.rest-catalog.oauth2.credential": "writer:${ENV:POLARIS_CLIENT_SECRET_WRITER}",  # its own principal
        "iceberg.rest-catalog.oauth2.scope": "PRINCIPAL_ROLE:ALL",
        "iceberg.rest-catalog.oauth2.server-uri": "http://polaris.lakehouse.internal:8181/api/catalog/v1/oauth/tokens",
        "iceberg.rest-catalog.vended-credentials-enabled": "true",
    }
    # Polaris tells identities apart: the reader gets a Trino catalog of its own, as its own principal.
    assert "iceberg.rest-catalog.oauth2.credential=reader:${ENV:POLARIS_CLIENT_SECRET_READER}" in files[
        "polaris_ro.properties"]
    assert "lakekeeper.properties" not in files  # refused until it enforces grants (ADR 0013)
    env = trino.secret_env(ServiceContext(spec, "trino"))
    assert env["POLARIS_CLIENT_SECRET_WRITER"] == "${secret:polaris-client-secret-writer}"
    assert not any("ROOT" in key or "root" in value for key, value in env.items())
    with pytest.raises(ValueError) as refused:
        trino.rest_properties("made-up", {"scope": "x", "rest-metrics-reporting-enabled": "false"})
    assert str(refused.value).startswith("services.made-up: Trino has no catalog property for the REST client "
                                         "property rest-metrics-reporting-enabled='false'")


def test_each_identity_holds_a_trino_password_declared_by_the_trino_package() -> None:
    """The per-identity secret is Trino's declaration (IdentitySecret), not a case in the secrets module: its config
    key, its lab default and where clients find it follow from it."""
    from lakehouse_platform.services.registry import registry

    declaring, item = registry().identity_secrets()["trino-password"]
    assert (declaring, item.secret_name("reader"), item.credentials_key, item.lab_default("reader")) == (
        "trino", "trino-password-reader", "trino_password", "lab-reader-trino-password")
    assert item.values is not None and item.values("reader") == {"trino_user": "reader"}


def test_trino_may_set_the_properties_a_declared_table_carries() -> None:
    from lakehouse_platform.services.context import ServiceContext
    from lakehouse_platform.services.trino import config as trino

    platform = stack_platform("cloud")
    platform["tables"] = [{"namespace": "shop", "name": "orders", "owner": "o", "freshness_minutes": 5,
                           "columns": [{"name": "id", "type": "long"}], "properties": {"comment": "c"}}]
    spec = load_platform(platform)
    files = trino.catalog_files(ServiceContext(spec, "trino"))
    (line,) = [x for x in files["polaris.properties"].splitlines() if x.startswith("iceberg.allowed-extra-properties")]
    # The typed ones, the platform's table properties but the one Trino sets itself (max_commit_retry), the table's.
    platform_keys = [k for k in spec.table_properties() if k not in tables.TRINO_OWN_PROPERTIES]
    assert "history.expire.max-snapshot-age-ms" in platform_keys and "commit.retry.num-retries" not in platform_keys
    assert line.split("=", 1)[1].split(",") == [*tables.PROPERTY_KEYS, *platform_keys, "comment"]


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


# -- the declared tables on aws (Trino's aws part of the orchestration layer): a deployment step, its script -----


def test_the_cloud_creates_declared_tables_through_trino_as_a_deployment_step(cloud_with_tables: ProgramRun) -> None:
    (step,) = [r for r in cloud_with_tables.of_type("pulumi-python:dynamic/aws:EcsTaskRun")
               if r.name == "lakehouse-declared-tables"]
    spec = load_platform(cloud_with_tables_platform())  # the platform's table properties, under the table's own
    declared = tables.trino_statements("polaris", {
        "namespace": "shop", "name": "orders", "owner": "bookshop data engineering", "freshness_minutes": 60,
        "columns": [{"name": "order_id", "type": "long"}], "maintenance": ["expire_snapshots"],
        "properties": {**spec.table_properties("shop.orders"), "comment": "the bookshop's orders"}})

    assert step.inputs["trigger"] == hashlib.sha256(json.dumps(declared).encode()).hexdigest()
    assert step.inputs["region"] == "eu-west-1" and step.inputs["labels"]["lakehouse.layer"] == "orchestration"
    assert {"lakehouse-logs-tables"} <= set(step.depends_on)
    task = next(t for t in cloud_with_tables.of_type("aws:ecs/taskDefinition:TaskDefinition")
                if t.name == "lakehouse-tables")
    script = json.loads(task.inputs["containerDefinitions"])[0]["command"][0]
    assert declared[1] in script.replace("'\"'\"'", "'")  # shlex-quoted in the script


def test_a_first_cloud_up_sets_the_catalog_up_before_the_declared_tables(cloud_with_tables: ProgramRun) -> None:
    """The catalog's jobs run inside `pulumi up`, in the catalog_jobs output's order, each after the one before and
    after the catalog servers; the declared tables (and the Flink application, the connectors) wait for the last."""
    runs = {r.name: r for r in cloud_with_tables.of_type("pulumi-python:dynamic/aws:EcsTaskRun")}
    order = sorted(cloud_with_tables.outputs["catalog_jobs"], key=lambda j: cloud_with_tables.outputs[
        "catalog_jobs"][j]["order"])
    assert order[0] == "postgres-init" and len(order) >= 2, order
    for before, after in itertools.pairwise(order):
        assert f"lakehouse-{before}-run" in runs[f"lakehouse-{after}-run"].depends_on, (before, after)
    assert "lakehouse-polaris" in runs[f"lakehouse-{order[0]}-run"].depends_on  # the catalog server first
    for job in order:
        run = runs[f"lakehouse-{job}-run"]
        assert run.inputs["trigger"] == job and run.inputs["labels"]["lakehouse.layer"] == "catalog"
    assert f"lakehouse-{order[-1]}-run" in runs["lakehouse-declared-tables"].depends_on


# -- the tables script against a stand-in Trino CLI ----------------------------------------------------------


FAKE_TRINO = """#!/bin/sh
# Records its arguments, one call per line; answers the table listing like `trino --output-format TSV`.
printf '%s\\n' "$*" >> "$TRINO_CALLS"
case "$*" in
  *information_schema.tables*) printf 'shop\\torders\\nshop\\tcustomers\\nprobe\\tscratch\\n' ;;
  *FAIL_HERE*) echo "Query failed: TABLE_NOT_FOUND" >&2; exit 1 ;;
esac
"""


def _fake_trino(tmp_path: Path) -> dict[str, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    tool = bindir / "trino"
    tool.write_text(FAKE_TRINO)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bindir}:{os.environ['PATH']}", "TRINO_CALLS": str(tmp_path / "calls")}


def _run(script: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", "\n".join(script)], env=env, capture_output=True, text=True, timeout=30,
                          check=False)


def test_a_failing_statement_fails_the_tables_task(tmp_path: Path) -> None:
    statements = ["CREATE SCHEMA IF NOT EXISTS x", "SELECT FAIL_HERE", "CREATE TABLE never"]
    failed = _run(trino_aws.tables_script("http://trino:8080", statements), _fake_trino(tmp_path / "t"))
    assert failed.returncode != 0 and "TABLE_NOT_FOUND" in failed.stderr
    calls = (tmp_path / "t" / "calls").read_text().splitlines()
    assert [c.split("--execute ")[1] for c in calls] == ["SELECT 1", *statements[:2]]  # stopped at the failure
