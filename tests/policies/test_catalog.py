"""Catalog rules: no in-memory SQLite, a persistent catalog database, the REST fixture on lab only."""

from __future__ import annotations

import base64
import copy

import pytest

from lakehouse_platform.config import ConfigError, load_platform
from lakehouse_platform.paths import state_root
from lakehouse_platform.policies.registry import validate_all
from tests.support.policy_support import (
    UNKNOWN_STRING,
    aws,
    cloud_context,
    ecs_task,
    graph,
    lab,
    named,
    replace_env,
    stack_platform,
    violations,
)


def test_in_memory_sqlite_is_refused_by_the_config_and_by_the_policy():
    platform = copy.deepcopy(stack_platform("lab"))
    platform["catalog"]["fixture_jdbc_uri"] = "jdbc:sqlite:file::memory:?cache=shared"
    with pytest.raises(ConfigError, match="in-memory SQLite"):
        load_platform(platform)
    resources, context = lab()
    replace_env(named(resources, "rest-fixture", "docker:index/container:Container"), "CATALOG_URI",
                 "jdbc:sqlite:file:fixture?mode=memory&cache=shared")
    assert violations("catalog-no-in-memory-sqlite", resources, context) == [
        "docker:Container 'rest-fixture' (layer catalog, owner platform) breaks catalog-no-in-memory-sqlite: "
        "CATALOG_URI=jdbc:sqlite:file:fixture?mode=memory&cache=shared is an in-memory SQLite database: each pooled "
        "connection gets its own empty copy (no such table: iceberg_tables) and a restart loses every table; use a "
        "file, e.g. jdbc:sqlite:file:/catalog/fixture.db"
    ]


def test_in_memory_sqlite_in_an_ecs_config_file_is_refused():
    body = "catalog-impl=org.apache.iceberg.jdbc.JdbcCatalog\nuri=jdbc:sqlite::memory:\n"
    command = ["/bin/bash", "-c", f"echo {base64.b64encode(body.encode()).decode()} | base64 -d > /etc/cat.properties"]
    task = ecs_task("cat", [{"name": "cat", "image": "x/y:1", "memory": 512, "command": command}], "polaris", "catalog")
    assert violations("catalog-no-in-memory-sqlite", [task], cloud_context()) == [
        "aws:TaskDefinition 'cat' (layer catalog, owner platform) breaks catalog-no-in-memory-sqlite: "
        "jdbc:sqlite::memory: in /etc/cat.properties is an in-memory SQLite database: each pooled connection gets its "
        "own empty copy (no such table: iceberg_tables) and a restart loses every table; use a file, e.g. "
        "jdbc:sqlite:file:/catalog/fixture.db"
    ]


def test_fixture_database_without_mount_user_or_init_job_is_refused():
    rule = "catalog-database-persistent"
    prefix = "docker:Container 'rest-fixture' (layer catalog, owner platform) breaks catalog-database-persistent: "

    resources, context = lab()
    named(resources, "rest-fixture", "docker:index/container:Container").props.pop("volumes")  # its bind (Binds)
    assert violations(rule, resources, context) == [
        prefix + "the catalog database /catalog/fixture.db is on no mount: it lives in the container's writable layer "
                 "and is lost with it; bind-mount /catalog"
    ]

    resources, context = lab()
    named(resources, "rest-fixture", "docker:index/container:Container").props["user"] = "0:0"
    assert violations(rule, resources, context) == [
        prefix + "the catalog runs as root (0:0); run it as the image's non-root user and let an init job hand it the "
                 "bind mount"
    ]

    resources, context = lab()
    resources = [r for r in resources if r.name != "rest-fixture-init"]
    source = str(state_root() / "lab" / "rest-fixture" / "catalog")
    assert violations(rule, resources, context) == [
        prefix + f"nothing hands the bind mount {source} (at /catalog) to the catalog's user 1000:1000: add an init "
                 "job that mounts it and runs chown 1000:1000, or SQLite fails with SQLITE_CANTOPEN"
    ]


def test_rds_without_backups_is_not_a_persistent_catalog():
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 0}, service="postgres")
    assert violations("catalog-database-persistent", [rds], cloud_context()) == [
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks catalog-database-persistent: the catalog "
        "database keeps no automated backups (backup_retention_period is 0); set it above 0"
    ]


def test_rest_fixture_on_aws_is_refused():
    task = ecs_task("fixture", [{"name": "rest-fixture", "image": "apache/iceberg-rest-fixture:1.10.1", "memory": 512,
                                 "healthCheck": {"command": ["CMD", "true"]}}], "rest-fixture", "catalog")
    assert violations("catalog-rest-fixture-lab-only", [task], cloud_context()) == [
        "aws:TaskDefinition 'fixture' (layer catalog, owner platform) breaks catalog-rest-fixture-lab-only: runs the "
        "REST fixture (rest-fixture) on aws: the fixture is a test server with SQLite behind it, allowed on lab and "
        "native only; use polaris on RDS"
    ]
    resources, context = lab()
    assert violations("catalog-rest-fixture-lab-only", resources, context) == []


def test_a_publicly_accessible_catalog_database_is_refused():
    """It used to pass every policy: backups, encryption, secrets were all in order."""
    resources, context = graph("cloud")
    databases = [r for r in resources if r.type == "aws:rds/instance:Instance"]
    assert [db.props.get("publiclyAccessible") for db in databases] == [False] * len(databases) != []
    db = databases[0]
    db.props["publiclyAccessible"] = True
    found = {name: msgs for name, msgs in validate_all(resources, context).items() if msgs}
    assert found.pop("image-digest-advised")  # advice only, on every stack
    assert found == {"catalog-database-private": [
        f"aws:Instance '{db.name}' (layer catalog, owner platform) breaks catalog-database-private: "
        "publicly_accessible is true: the catalog database gets a public address, reachable from the internet; set "
        "publicly_accessible=False and reach it from the private subnets (the tasks' security group)"
    ]}
    cluster_member = aws("aws:rds/clusterInstance:ClusterInstance", "catalog-db-1", "catalog",
                         {"publiclyAccessible": "true"}, service="postgres")
    assert violations("catalog-database-private", [cluster_member], cloud_context()) == [
        "aws:ClusterInstance 'catalog-db-1' (layer catalog, owner platform) breaks catalog-database-private: "
        "publicly_accessible is true: the catalog database gets a public address, reachable from the internet; set "
        "publicly_accessible=False and reach it from the private subnets (the tasks' security group)"
    ]
    cluster_member.props["publiclyAccessible"] = UNKNOWN_STRING  # decided at `pulumi up`, not a violation
    assert violations("catalog-database-private", [cluster_member], cloud_context()) == []
