"""The policy pack: every stack's resources pass every rule, and each rule refuses what breaks it.

The program runs under Pulumi mocks for each stack (tests/harness.py); every registered resource
is fed to the validators exactly as the pack would see it (wire names, secrets in wire form, URNs
carrying the parent chain). Then, per rule, a mutated resource (or config) must be refused with
the exact message. Rules for the aws target are also exercised on small hand-made resources, so
they are tested whatever state the aws target is in.
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Registered, run_program

from infra.config import ConfigError, load_platform
from infra.paths import state_root
from policies import config as pack_config
from policies.validators import (
    LAYER_NAMES,
    POLICIES,
    SECRET_SIG,
    SIG_KEY,
    UNKNOWN_VALUES,
    Resource,
    StackContext,
    policy,
    run_policy,
    validate_all,
)

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "lakehouse-platform"
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


# --------------------------------------------------------------------------------------------
# Running a stack under mocks and turning its resources into the validators' plain data
# --------------------------------------------------------------------------------------------


def stack_platform(stack: str) -> dict[str, Any]:
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    return document["config"]["lakehouse:platform"]


def to_resources(registered: list[Registered], stack: str) -> list[Resource]:
    """The mocks' records as the engine would show them: URNs with the parent type chain, parent URNs."""
    by_name = {r.name: r for r in registered if r.type.startswith("platform:layers:")}

    def qualified(r: Registered) -> str:
        parent = by_name.get(r.parent) if r.parent else None
        return f"{qualified(parent)}${r.type}" if parent is not None else r.type

    def urn(r: Registered) -> str:
        return f"urn:pulumi:{stack}::{PROJECT}::{qualified(r)}::{r.name}"

    return [
        Resource(r.type, r.name, copy.deepcopy(r.inputs), urn(r),
                 urn(by_name[r.parent]) if r.parent in by_name else None, id=f"{r.name}-id")
        for r in registered
    ]


_GRAPHS: dict[str, tuple[list[Resource], StackContext]] = {}


def graph(stack: str) -> tuple[list[Resource], StackContext]:
    """(resources, context) of a stack, run once per session."""
    if stack not in _GRAPHS:
        # The policies judge the declaration, not the host: run_program checks no ports, needs no cache.
        run = run_program(stack, stack_platform(stack))
        context = StackContext.from_dict(pack_config.context_for_stack(stack))
        _GRAPHS[stack] = (to_resources(run.resources, stack), context)
    resources, context = _GRAPHS[stack]
    return copy.deepcopy(resources), context


def isolated_pulumi_env(tmp_path: Path, passphrase: str) -> dict[str, str]:
    """The project's Pulumi environment, with a throwaway file backend and passphrase."""
    from infra.stack.workspace import pulumi_env

    return {**pulumi_env(), "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PULUMI_CONFIG_PASSPHRASE": passphrase}


def named(resources: list[Resource], name: str, type_: str | None = None) -> Resource:
    matches = [r for r in resources if r.name == name and (type_ is None or r.type == type_)]
    assert len(matches) == 1, f"expected one resource {name!r}, found {len(matches)}"
    return matches[0]


def violations(name: str, resources: list[Resource], context: StackContext | None) -> list[str]:
    return [str(v) for v in run_policy(policy(name), resources, context)]


def secret(value: Any) -> dict[str, Any]:
    return {SIG_KEY: SECRET_SIG, "value": value}


def lab() -> tuple[list[Resource], StackContext]:
    return graph("lab")


# --------------------------------------------------------------------------------------------
# Every stack passes
# --------------------------------------------------------------------------------------------


def test_constants_match_the_program():
    from infra.config import load_stack
    from infra.layers.base import layer_labels
    from infra.spec import LAYER_NAMES as PROGRAM_LAYERS
    from infra.spec import Layer

    assert LAYER_NAMES == PROGRAM_LAYERS
    labels = layer_labels(load_stack("lab"), Layer.COMPUTE, "trino")
    assert set(labels) == {"lakehouse.platform", "lakehouse.layer", "lakehouse.owner", "lakehouse.service"}
    from pulumi_policy.deserialize import SPECIAL_SECRET_SIG, SPECIAL_SIG_KEY
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    assert (SIG_KEY, SECRET_SIG) == (SPECIAL_SIG_KEY, SPECIAL_SECRET_SIG)
    assert UNKNOWN_STRING_VALUE in UNKNOWN_VALUES


@pytest.mark.parametrize("stack", ["lab", "cloud", "native"])
def test_every_resource_of_the_stack_passes_every_enforced_rule(stack):
    resources, context = graph(stack)
    levels = pack_config.levels_for(stack)
    found = validate_all(resources, context)
    broken = {name: msgs for name, msgs in found.items() if msgs and levels[name] == "mandatory"}
    assert broken == {}, "\n".join(m for msgs in broken.values() for m in msgs)
    assert len(resources) > 10


def test_lab_gets_digest_advice_only_as_advice():
    resources, context = lab()
    advice = violations("image-digest-advised", resources, context)
    assert pack_config.levels_for("lab")["image-digest-advised"] == "advisory"
    assert (
        "docker:RemoteImage 'trino-image' (layer compute, owner each engine's team) breaks image-digest-advised: "
        "image 'trinodb/trino:483' is pinned by tag only; add its digest (trinodb/trino:483@sha256:...) so a "
        "re-pushed tag cannot change what runs"
    ) in advice
    pinned = copy.deepcopy(resources)
    image = named(pinned, "trino-image")
    image.props["name"] = "trinodb/trino:483@sha256:" + "a" * 64
    assert not any("'trino-image'" in m for m in violations("image-digest-advised", pinned, context))


# --------------------------------------------------------------------------------------------
# layer-ownership
# --------------------------------------------------------------------------------------------


def _set_label(resource: Resource, key: str, value: str | None) -> None:
    labels = [item for item in resource.props["labels"] if item["label"] != key]
    if value is not None:
        labels.append({"label": key, "value": value})
    resource.props["labels"] = labels


def test_ownership_refuses_a_resource_without_owner_label():
    resources, context = lab()
    _set_label(named(resources, "trino", "docker:index/container:Container"), "lakehouse.owner", None)
    assert violations("layer-ownership", resources, context) == [
        "docker:Container 'trino' (layer compute, owner analytics engineering) breaks layer-ownership: carries no "
        "lakehouse.owner label; every resource says which layer it belongs to and who answers for it "
        "(infra.layers.base.layer_labels)"
    ]


def test_ownership_refuses_an_owner_the_table_does_not_name():
    resources, context = lab()
    _set_label(named(resources, "postgres-data"), "lakehouse.owner", "data engineering")
    assert violations("layer-ownership", resources, context) == [
        "docker:Volume 'postgres-data' (layer catalog, owner data engineering) breaks layer-ownership: label "
        "lakehouse.owner='data engineering' but the ownership table of stack lab says service postgres is owned "
        "by 'platform'"
    ]


def test_ownership_follows_a_changed_ownership_table_in_the_stack_config():
    """The stack file hands the catalog to a new owner; resources still labelled with the old one are refused."""
    resources, _ = lab()
    platform = copy.deepcopy(stack_platform("lab"))
    platform.setdefault("layers", {})["catalog"] = {"owner": "catalog team"}
    context = StackContext.from_dict(pack_config.stack_context(load_platform(platform), "lab"))
    found = violations("layer-ownership", resources, context)
    assert (
        "docker:Container 'rest-fixture' (layer catalog, owner platform) breaks layer-ownership: label "
        "lakehouse.owner='platform' but the ownership table of stack lab says service rest-fixture is owned by "
        "'catalog team'"
    ) in found
    catalog = [r for r in resources if "lakehouse.layer" in str(r.props.get("labels")) and "'catalog'" in str(r.props.get("labels"))]
    assert len(found) == len(catalog) > 5


def test_ownership_refuses_a_layer_label_that_contradicts_the_component():
    resources, context = lab()
    _set_label(named(resources, "kafka-data"), "lakehouse.layer", "storage")
    assert violations("layer-ownership", resources, context) == [
        "docker:Volume 'kafka-data' (layer storage, owner streaming) breaks layer-ownership: label "
        "lakehouse.layer='storage' but it is built by the compute layer's component; label it compute or move it",
    ]


def test_ownership_refuses_an_unlabelled_resource_outside_every_layer():
    resources, context = lab()
    image = named(resources, "postgres-image")
    image.parent = None
    image.urn = f"urn:pulumi:lab::{PROJECT}::{image.type}::{image.name}"
    assert violations("layer-ownership", resources, context) == [
        "docker:RemoteImage 'postgres-image' (layer unknown, owner unknown) breaks layer-ownership: takes no labels "
        "or tags and sits outside every layer component; create it with parent=<its layer's component> so it "
        "inherits the layer and its owner"
    ]


def test_ownership_says_when_the_table_did_not_reach_the_pack():
    resources, _ = lab()
    assert violations("layer-ownership", resources, None) == [
        "stack (layer unknown, owner unknown) breaks layer-ownership: cannot check owners against the stack's "
        "ownership table: the stack's platform config (lakehouse:platform) did not reach the policy pack; run "
        "`pulumi preview --policy-pack policies` with a Pulumi CLI that passes stack config to policy packs, or "
        "add `--policy-pack-config` rendered by `python -m policies.config <stack>`"
    ]


# --------------------------------------------------------------------------------------------
# Hand-made aws resources (the aws rules are tested whatever state the aws target is in)
# --------------------------------------------------------------------------------------------


def cloud_context() -> StackContext:
    return StackContext.from_dict(pack_config.context_for_stack("cloud"))


def aws(type_: str, name: str, layer: str, props: dict[str, Any], service: str | None = None,
        tags: bool = True) -> Resource:
    component = f"platform:layers:{layer.capitalize()}"
    urn = f"urn:pulumi:cloud::{PROJECT}::{component}${type_}::{name}"
    props = dict(props)
    if tags:
        context = cloud_context()
        props["tags"] = {"lakehouse.platform": "lakehouse", "lakehouse.layer": layer,
                         "lakehouse.owner": context.owner_of(layer, service) or ""}
        if service:
            props["tags"]["lakehouse.service"] = service
    return Resource(type_, name, props, urn, f"urn:pulumi:cloud::{PROJECT}::{component}::lakehouse-{layer}",
                    id=f"{name}-id")


def warehouse_bucket(**extra: Any) -> list[Resource]:
    bucket = aws("aws:s3/bucket:Bucket", "warehouse", "storage", {"bucket": "lakehouse-warehouse-prod"})
    versioning = aws("aws:s3/bucketVersioning:BucketVersioning", "warehouse-versioning", "storage",
                     {"bucket": "lakehouse-warehouse-prod", "versioningConfiguration": {"status": "Enabled"}}, tags=False)
    encryption = aws("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
                     "warehouse-sse", "storage",
                     {"bucket": "warehouse-id", "rules": [{"applyServerSideEncryptionByDefault": {
                         "sseAlgorithm": "aws:kms", "kmsMasterKeyId": "arn:aws:kms:eu-west-1:1:key/k"},
                         "bucketKeyEnabled": True}]}, tags=False)
    block = aws("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "warehouse-pab", "storage",
                {"bucket": "lakehouse-warehouse-prod", "blockPublicAcls": True, "blockPublicPolicy": True,
                 "ignorePublicAcls": True, "restrictPublicBuckets": True}, tags=False)
    parts = {"versioning": versioning, "encryption": encryption, "block": block}
    for key, value in extra.items():
        if value is None:
            parts.pop(key)
        else:
            parts[key].props.update(value)
    return [bucket, *parts.values()]


def ecs_task(name: str, containers: list[dict[str, Any]], service: str, layer: str = "compute",
             memory: str | None = "4096") -> Resource:
    props: dict[str, Any] = {"family": f"lakehouse-cloud-{name}", "containerDefinitions": json.dumps(containers)}
    if memory is not None:
        props["memory"] = memory
    return aws("aws:ecs/taskDefinition:TaskDefinition", name, layer, props, service=service)


def test_hand_made_aws_resources_that_keep_the_contracts_pass():
    context = cloud_context()
    trino = ecs_task("trino", [{"name": "trino", "image": "trinodb/trino:483@sha256:" + "b" * 64, "memory": 4096,
                                "essential": True, "healthCheck": {"command": ["CMD", "/usr/lib/trino/bin/health-check"]},
                                "environment": [{"name": "TRINO_ENV", "value": "prod"}],
                                "secrets": [{"name": "POLARIS_ROOT_SECRET", "valueFrom": "arn:aws:secretsmanager:x"}]}],
                     "trino")
    service = aws("aws:ecs/service:Service", "trino", "compute", {"taskDefinition": "lakehouse-cloud-trino"}, service="trino")
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 14,
                                                                      "manageMasterUserPassword": True}, service="postgres")
    lifecycle = aws("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "warehouse-lifecycle", "storage",
                    {"bucket": "lakehouse-warehouse-prod", "rules": [
                        {"id": "noncurrent", "status": "Enabled", "filter": {},
                         "noncurrentVersionExpiration": {"noncurrentDays": 30},
                         "abortIncompleteMultipartUpload": {"daysAfterInitiation": 7}}]}, tags=False)
    resources = [*warehouse_bucket(), trino, service, rds, lifecycle]
    assert {k: v for k, v in validate_all(resources, context).items() if v} == {}


# --------------------------------------------------------------------------------------------
# storage
# --------------------------------------------------------------------------------------------


def test_lifecycle_rule_expiring_the_warehouse_is_refused():
    lifecycle = aws("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "warehouse-lifecycle",
                    "storage", {"bucket": "lakehouse-warehouse-prod", "rules": [
                        {"id": "cleanup", "status": "Enabled", "filter": {"prefix": ""}, "expiration": {"days": 30}}]},
                    tags=False)
    assert violations("storage-lifecycle-keeps-warehouse", [lifecycle], cloud_context()) == [
        "aws:BucketLifecycleConfiguration 'warehouse-lifecycle' (layer storage, owner platform) breaks "
        "storage-lifecycle-keeps-warehouse: lifecycle rule 'cleanup' expires current objects after 30 days under "
        "prefix '' (the whole bucket), which overlaps warehouse prefix '' (the whole bucket); only Iceberg's "
        "maintenance may delete table files: scope the rule outside the warehouse prefixes or expire noncurrent "
        "versions only"
    ]


def test_lifecycle_rule_outside_the_warehouse_prefixes_is_allowed():
    data = dict(pack_config.context_for_stack("cloud"))
    data["storage"] = {"bucket": "lakehouse-warehouse-prod", "warehouse_prefixes": ["warehouse/"]}
    context = StackContext.from_dict(data)

    def rule(prefix: str) -> Resource:
        return aws("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "lc", "storage",
                   {"bucket": "lakehouse-warehouse-prod", "rules": [
                       {"id": "tmp", "status": "Enabled", "filter": {"and": {"prefix": prefix}},
                        "expiration": {"days": 1}}]}, tags=False)

    assert violations("storage-lifecycle-keeps-warehouse", [rule("tmp/")], context) == []
    assert violations("storage-lifecycle-keeps-warehouse", [rule("warehouse/db/")], context) == [
        "aws:BucketLifecycleConfiguration 'lc' (layer storage, owner platform) breaks storage-lifecycle-keeps-warehouse: "
        "lifecycle rule 'tmp' expires current objects after 1 days under prefix 'warehouse/db/', which overlaps "
        "warehouse prefix 'warehouse/'; only Iceberg's maintenance may delete table files: scope the rule outside "
        "the warehouse prefixes or expire noncurrent versions only"
    ]


def test_bucket_without_versioning_kms_and_public_access_block_is_refused():
    resources = warehouse_bucket(versioning=None, block=None,
                                 encryption={"rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}]})
    prefix = "aws:Bucket 'warehouse' (layer storage, owner platform) breaks storage-bucket-protected: bucket "
    assert violations("storage-bucket-protected", resources, cloud_context()) == [
        prefix + "is not versioned (no BucketVersioning with status Enabled): an overwritten or deleted metadata "
                 "file could not be recovered",
        prefix + "is not encrypted with SSE-KMS (sse_algorithm is 'AES256'; use 'aws:kms')",
        prefix + "has no public access block (all four of block_public_acls, block_public_policy, ignore_public_acls, "
                 "restrict_public_buckets must be true)",
    ]
    half_open = warehouse_bucket(block={"restrictPublicBuckets": False})
    assert violations("storage-bucket-protected", half_open, cloud_context()) == [
        prefix + "is not blocked from public access (restrict_public_buckets not true)"
    ]


def test_object_store_without_a_volume_is_refused():
    resources, context = lab()
    named(resources, "seaweedfs", "docker:index/container:Container").props.pop("mounts")
    assert violations("storage-persistent-volume", resources, context) == [
        "docker:Container 'seaweedfs' (layer storage, owner platform) breaks storage-persistent-volume: the object "
        "store's data directory /data is not on a named volume or bind mount: every byte of every table would live "
        "in the container's writable layer and be lost with it; mount a named volume at /data"
    ]


# --------------------------------------------------------------------------------------------
# catalog
# --------------------------------------------------------------------------------------------


def _replace_env(resource: Resource, name: str, value: str) -> None:
    envs = resource.props["envs"]
    wrapped = isinstance(envs, dict)
    entries = envs["value"] if wrapped else envs
    entries = [e for e in entries if not e.startswith(name + "=")] + [f"{name}={value}"]
    resource.props["envs"] = secret(entries) if wrapped else entries


def test_in_memory_sqlite_is_refused_by_the_config_and_by_the_policy():
    platform = copy.deepcopy(stack_platform("lab"))
    platform["catalog"]["fixture_jdbc_uri"] = "jdbc:sqlite:file::memory:?cache=shared"
    with pytest.raises(ConfigError, match="in-memory SQLite"):
        load_platform(platform)
    resources, context = lab()
    _replace_env(named(resources, "rest-fixture", "docker:index/container:Container"), "CATALOG_URI",
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
    named(resources, "rest-fixture", "docker:index/container:Container").props.pop("mounts")
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
        "native only; use polaris or lakekeeper on RDS"
    ]
    resources, context = lab()
    assert violations("catalog-rest-fixture-lab-only", resources, context) == []


# --------------------------------------------------------------------------------------------
# images, memory, health
# --------------------------------------------------------------------------------------------


def test_latest_and_untagged_images_are_refused():
    resources, context = lab()
    named(resources, "trino-image").props["name"] = "trinodb/trino:latest"
    named(resources, "kafka-image").props["name"] = "registry.local:5000/apache/kafka"
    assert violations("image-pinned", resources, context) == [
        "docker:RemoteImage 'trino-image' (layer compute, owner each engine's team) breaks image-pinned: image "
        "'trinodb/trino:latest' uses 'latest', which moves under you; pin an explicit version tag",
        "docker:RemoteImage 'kafka-image' (layer compute, owner each engine's team) breaks image-pinned: image "
        "'registry.local:5000/apache/kafka' has no tag; pin a version such as registry.local:5000/apache/kafka:1.2.3",
    ]


def test_container_without_memory_limit_is_refused():
    resources, context = lab()
    named(resources, "polaris-bootstrap").props.pop("memory")
    assert violations("memory-limit", resources, context) == [
        "docker:Container 'polaris-bootstrap' (layer catalog, owner platform) breaks memory-limit: container has no "
        "memory limit (memory); one runaway JVM takes the whole host down: set the service's memory budget"
    ]
    task = ecs_task("trino", [{"name": "trino", "image": "trinodb/trino:483"}], "trino", memory=None)
    assert violations("memory-limit", [task], cloud_context()) == [
        "aws:TaskDefinition 'trino' (layer compute, owner analytics engineering) breaks memory-limit: task has no "
        "task-level memory and container(s) trino have no memory limit"
    ]


def test_server_without_health_check_is_refused_and_jobs_need_none():
    resources, context = lab()
    named(resources, "lakekeeper", "docker:index/container:Container").props.pop("healthcheck")
    assert "healthcheck" not in named(resources, "lakekeeper-migrate").props
    assert violations("service-health-check", resources, context) == [
        "docker:Container 'lakekeeper' (layer catalog, owner platform) breaks service-health-check: server container "
        "has no health check (healthcheck); nothing can tell a started service from a ready one"
    ]


def test_ecs_service_without_any_health_check_is_refused():
    context = cloud_context()
    task = ecs_task("polaris", [{"name": "polaris", "image": "apache/polaris:1.7.0", "memory": 1024}], "polaris", "catalog")
    service = aws("aws:ecs/service:Service", "polaris", "catalog", {"taskDefinition": UNKNOWN_STRING}, service="polaris")
    assert violations("service-health-check", [task, service], context) == [
        "aws:Service 'polaris' (layer catalog, owner platform) breaks service-health-check: ECS service has no load "
        "balancer and container(s) polaris of task definition 'polaris' have no healthCheck"
    ]
    fronted = copy.deepcopy(service)
    fronted.props["loadBalancers"] = [{"targetGroupArn": "arn:tg", "containerName": "polaris", "containerPort": 8181}]
    group = aws("aws:lb/targetGroup:TargetGroup", "polaris-tg", "catalog", {"healthCheck": {"enabled": False}},
                service="polaris")
    assert violations("service-health-check", [task, fronted, group], context) == [
        "aws:TargetGroup 'polaris-tg' (layer catalog, owner platform) breaks service-health-check: target group's "
        "health check is disabled"
    ]


# --------------------------------------------------------------------------------------------
# secrets
# --------------------------------------------------------------------------------------------


def test_plain_text_credentials_in_environment_and_files_are_refused():
    resources, context = lab()
    fixture = named(resources, "rest-fixture", "docker:index/container:Container")
    fixture.props["envs"] = fixture.props["envs"]["value"]  # the same values, no longer secret
    store = named(resources, "seaweedfs", "docker:index/container:Container")
    store.props["uploads"] = store.props["uploads"]["value"]
    assert violations("secrets-not-plaintext", resources, context) == [
        "docker:Container 'seaweedfs' (layer storage, owner platform) breaks secrets-not-plaintext: config file "
        "/etc/seaweedfs/s3.json holds credential(s) in plain text (secretKey); make the file content a Pulumi secret "
        "or read the value from the environment (${ENV:...})",
        "docker:Container 'rest-fixture' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable AWS_SECRET_ACCESS_KEY holds a credential in plain text; make the value a Pulumi secret (config "
        "--secret or pulumi.Output.secret)",
    ]


def test_password_inside_a_url_is_refused():
    resources, context = lab()
    keeper = named(resources, "lakekeeper", "docker:index/container:Container")
    keeper.props["envs"] = [e for e in keeper.props["envs"]["value"] if "ENCRYPTION" not in e]
    assert violations("secrets-not-plaintext", resources, context) == [
        "docker:Container 'lakekeeper' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable LAKEKEEPER__PG_DATABASE_URL_READ holds a URL with a password in plain text; make the value a Pulumi "
        "secret",
        "docker:Container 'lakekeeper' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable LAKEKEEPER__PG_DATABASE_URL_WRITE holds a URL with a password in plain text; make the value a "
        "Pulumi secret",
    ]


def test_ecs_credentials_in_environment_are_refused():
    task = ecs_task("polaris", [{"name": "polaris", "image": "apache/polaris:1.7.0", "memory": 1024,
                                 "environment": [{"name": "QUARKUS_DATASOURCE_PASSWORD", "value": "hunter2"}]}],
                    "polaris", "catalog")
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 14, "password": "hunter2"},
              service="postgres")
    found = violations("secrets-not-plaintext", [task, rds], cloud_context())
    assert found == [
        "aws:TaskDefinition 'polaris' (layer catalog, owner platform) breaks secrets-not-plaintext: container polaris "
        "passes QUARKUS_DATASOURCE_PASSWORD in environment; credentials go in secrets (valueFrom Secrets Manager or SSM)",
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks secrets-not-plaintext: password is set in "
        "plain text; use a Pulumi secret or manage_master_user_password",
    ]
    assert not any("hunter2" in m for m in found)
    rds.props["password"] = secret("hunter2")
    assert violations("secrets-not-plaintext", [rds], cloud_context()) == []


# --------------------------------------------------------------------------------------------
# governance and recovery
# --------------------------------------------------------------------------------------------


def test_static_keys_on_aws_are_refused():
    context = cloud_context()
    key = aws("aws:iam/accessKey:AccessKey", "trino-key", "governance", {"user": "trino"}, tags=False)
    catalog = "connector.name=iceberg\ns3.aws-access-key=${ENV:S3_ACCESS_KEY}\ns3.aws-secret-key=${ENV:S3_SECRET_KEY}\n"
    command = ["/bin/bash", "-c",
               f"set -e\necho {base64.b64encode(catalog.encode()).decode()} | base64 -d > /etc/trino/catalog/polaris.properties"]
    task = ecs_task("trino", [{"name": "trino", "image": "trinodb/trino:483", "memory": 4096, "command": command}], "trino")
    assert violations("governance-vended-credentials", [key, task], context) == [
        "aws:AccessKey 'trino-key' (layer governance, owner security, executed by platform) breaks "
        "governance-vended-credentials: creates a static access key for IAM user trino; engines get short-lived "
        "credentials from the catalog's vending role (task roles and vended credentials), never long-lived keys",
        "aws:TaskDefinition 'trino' (layer compute, owner analytics engineering) breaks governance-vended-credentials: "
        "a Trino catalog file sets s3.aws-access-key, s3.aws-secret-key; on aws Trino reads S3 with credentials "
        "vended by the catalog (vended-credentials-enabled=true) or its task role",
    ]
    resources, lab_context = lab()  # the lab's store has no vending: static keys from the environment are its way
    assert violations("governance-vended-credentials", resources, lab_context) == []


def test_backup_retention_below_the_recovery_promise_is_refused():
    context = cloud_context()
    assert context.backup_retention_days == 14
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 7}, service="postgres")
    short_plan = aws("aws:backup/plan:Plan", "catalog-backup", "recovery",
                     {"rules": [{"ruleName": "daily", "lifecycle": {"deleteAfter": 10}}]})
    assert violations("recovery-backup-retention", [rds, short_plan], context) == [
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks recovery-backup-retention: the catalog "
        "database keeps backups 7 days (backup_retention_period) and no AWS Backup plan keeps them that long (longest "
        "delete_after: 10 days); the recovery layer (owner platform) promises 14 days (recovery.backup_retention_days)"
    ]
    long_plan = copy.deepcopy(short_plan)
    long_plan.props["rules"][0]["lifecycle"]["deleteAfter"] = 35
    assert violations("recovery-backup-retention", [rds, long_plan], context) == []
    rds.props["backupRetentionPeriod"] = 14
    assert violations("recovery-backup-retention", [rds], context) == []


def test_recovery_promise_comes_from_the_stack_config():
    platform = copy.deepcopy(stack_platform("cloud"))
    platform["recovery"]["backup_retention_days"] = 30
    context = StackContext.from_dict(pack_config.stack_context(load_platform(platform), "cloud"))
    rds = aws("aws:rds/instance:Instance", "catalog-db", "catalog", {"backupRetentionPeriod": 14}, service="postgres")
    assert violations("recovery-backup-retention", [rds], context) == [
        "aws:Instance 'catalog-db' (layer catalog, owner platform) breaks recovery-backup-retention: the catalog "
        "database keeps backups 14 days (backup_retention_period) and no AWS Backup plan covers it; the recovery "
        "layer (owner platform) promises 30 days (recovery.backup_retention_days)"
    ]


# --------------------------------------------------------------------------------------------
# Cloud and native graphs, mutated (run once their targets exist)
# --------------------------------------------------------------------------------------------


def test_cloud_graph_refuses_a_public_bucket():
    resources, context = graph("cloud")
    blocks = [r for r in resources if r.type == "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"]
    assert blocks, "the aws target blocks public access to its buckets"
    blocks[0].props["blockPublicPolicy"] = False
    bucket = next(r for r in resources if r.type == "aws:s3/bucket:Bucket" and r.name == blocks[0].name)
    tags = bucket.props["tags"]  # the first bucket may be any layer's (the compute layer's artifacts bucket)
    assert violations("storage-bucket-protected", resources, context) == [
        f"aws:Bucket '{bucket.name}' (layer {tags['lakehouse.layer']}, owner {tags['lakehouse.owner']}) breaks "
        "storage-bucket-protected: bucket is not blocked from public access (block_public_policy not true)"
    ]


def test_cloud_graph_refuses_a_lifecycle_rule_that_expires_table_files():
    resources, context = graph("cloud")
    lifecycles = [r for r in resources if r.type == "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"]
    assert lifecycles
    # The warehouse's own bucket (the compute layer's artifacts bucket holds no table).
    target = next(r for r in lifecycles if "artifacts" not in r.name)
    target.props["rules"].append({"id": "expire-old-data", "status": "Enabled", "filter": {"prefix": ""},
                                  "expiration": {"days": 365}})
    layer = "storage" if "replica" not in target.name else "recovery"
    assert violations("storage-lifecycle-keeps-warehouse", resources, context) == [
        f"aws:BucketLifecycleConfiguration '{target.name}' (layer {layer}, owner platform) breaks "
        "storage-lifecycle-keeps-warehouse: lifecycle rule 'expire-old-data' expires current objects after 365 days "
        "under prefix '' (the whole bucket), which overlaps warehouse prefix '' (the whole bucket); only Iceberg's "
        "maintenance may delete table files: scope the rule outside the warehouse prefixes or expire noncurrent "
        "versions only"
    ]


def test_cloud_graph_refuses_backups_shorter_than_the_promise():
    resources, context = graph("cloud")
    databases = [r for r in resources if r.type in ("aws:rds/instance:Instance", "aws:rds/cluster:Cluster")]
    plans = [r for r in resources if r.type == "aws:backup/plan:Plan"]
    assert databases and plans
    for db in databases:
        db.props["backupRetentionPeriod"] = 7
    assert violations("recovery-backup-retention", resources, context) == []  # the AWS Backup plan keeps 14 days
    for plan in plans:
        for rule in plan.props["rules"]:
            rule["lifecycle"]["deleteAfter"] = 7
    assert violations("recovery-backup-retention", resources, context) == [
        f"aws:Instance '{db.name}' (layer catalog, owner platform) breaks recovery-backup-retention: the catalog "
        "database keeps backups 7 days (backup_retention_period) and no AWS Backup plan keeps them that long (longest "
        "delete_after: 7 days); the recovery layer (owner platform) promises 14 days (recovery.backup_retention_days)"
        for db in databases
    ]


def test_cloud_graph_refuses_static_keys_and_plain_credentials_in_a_task():
    resources, context = graph("cloud")
    task = next(r for r in resources if r.type == "aws:ecs/taskDefinition:TaskDefinition"
                and r.props["tags"].get("lakehouse.service") == "trino")
    containers = json.loads(task.props["containerDefinitions"])
    containers[0]["environment"].append({"name": "AWS_SECRET_ACCESS_KEY", "value": "not-vended"})
    task.props["containerDefinitions"] = json.dumps(containers)
    name = containers[0]["name"]
    head = f"aws:TaskDefinition '{task.name}' (layer compute, owner analytics engineering) breaks "
    assert violations("secrets-not-plaintext", resources, context) == [
        head + f"secrets-not-plaintext: container {name} passes AWS_SECRET_ACCESS_KEY in environment; credentials go in "
               "secrets (valueFrom Secrets Manager or SSM)"
    ]
    assert violations("governance-vended-credentials", resources, context) == [
        head + f"governance-vended-credentials: container {name} is given static AWS keys (AWS_SECRET_ACCESS_KEY); "
               "use the task role"
    ]


def test_native_graph_refuses_a_service_without_health_or_labels():
    resources, context = graph("native")
    services = [r for r in resources if r.type == "pulumi-python:dynamic/native:LocalService"]
    assert services
    target = services[0]
    target.props.pop("health", None)
    target.props["health"] = {}
    target.props.pop("labels", None)
    found = [m for name in ("service-health-check", "layer-ownership") for m in violations(name, resources, context)]
    assert any(m.startswith(f"native:LocalService '{target.name}'") and "local service has no health check" in m
               for m in found)
    assert any(m.startswith(f"native:LocalService '{target.name}'") and "carries no lakehouse.layer and no "
               "lakehouse.owner label" in m for m in found)


# --------------------------------------------------------------------------------------------
# Enforcement levels, policy config and the pack's wrappers
# --------------------------------------------------------------------------------------------


def test_enforcement_levels_per_stack():
    assert set(pack_config.levels_for("lab")) == {p.name for p in POLICIES}
    assert pack_config.levels_for("lab")["layer-ownership"] == "mandatory"
    assert pack_config.levels_for("native")["image-digest-advised"] == "disabled"
    assert pack_config.levels_for("some-new-stack")["image-digest-advised"] == "advisory"
    table = {"*": {"memory-limit": "advisory"}, "lab": {"memory-limit": "disabled"}}
    assert pack_config.levels_for("lab", table)["memory-limit"] == "disabled"
    assert pack_config.levels_for("cloud", table)["memory-limit"] == "advisory"


def test_enforcement_file_with_unknown_policy_or_level_is_refused(tmp_path):
    bad = tmp_path / "enforcement.yaml"
    bad.write_text("lab:\n  memory-limits: advisory\n  image-pinned: sometimes\n")
    with pytest.raises(pack_config.EnforcementError) as caught:
        pack_config.load_enforcement(bad)
    assert str(caught.value).splitlines() == [
        "enforcement.yaml: lab.memory-limits: unknown policy; known: " + ", ".join(p.name for p in POLICIES),
        "enforcement.yaml: lab.image-pinned: 'sometimes' is not a level; allowed: advisory, mandatory, disabled",
    ]


def test_rendered_policy_config_carries_levels_and_the_contract(capsys):
    assert pack_config.main(["cloud"]) == 0
    rendered = json.loads(capsys.readouterr().out)
    assert set(rendered) == {p.name for p in POLICIES}
    entry = rendered["recovery-backup-retention"]
    assert entry["enforcementLevel"] == "mandatory"
    assert entry["context"]["recovery"] == {"backup_retention_days": 14}
    assert entry["context"]["layers"]["governance"]["owner"] == "security, executed by platform"
    assert pack_config.context_of(entry).backup_retention_days == 14


def test_pack_wrappers_report_through_pulumi_policy():
    """The pack's ResourceValidationPolicy sees the props as the engine sends them (proxied, secrets kept)."""
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import PolicyCustomTimeouts, PolicyResourceOptions, ResourceValidationArgs
    from pulumi_policy.proxy import unknown_checking_proxy

    import policies.__main__ as pack

    policies = {p.name: p for p in pack.build_policies("native")}
    assert policies["image-digest-advised"].enforcement_level is EnforcementLevel.DISABLED
    wire = {"labels": {"lakehouse.layer": "catalog", "lakehouse.owner": "platform"},
            "env": {"POSTGRES_PASSWORD": {SIG_KEY: SECRET_SIG, "value": "pw"}, "S3_SECRET_KEY": "plain",
                    "CATALOG_URI": UNKNOWN_STRING},
            "health": {"kind": "tcp", "port": 5432}}
    props = unknown_checking_proxy(pack.deserialize_keeping_secrets(wire))
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [],
                                 f"urn:pulumi:native::{PROJECT}::platform:layers:Catalog::lakehouse-catalog")
    urn = f"urn:pulumi:native::{PROJECT}::platform:layers:Catalog$pulumi-python:dynamic/native:LocalService::postgres"
    args = ResourceValidationArgs("pulumi-python:dynamic/native:LocalService", props, urn, "postgres", opts, None,
                                  {"context": pack_config.context_for_stack("native")})
    reported: list[str] = []
    policies["secrets-not-plaintext"].validate(args, lambda msg, urn=None: reported.append(msg))
    policies["catalog-no-in-memory-sqlite"].validate(args, lambda msg, urn=None: reported.append(msg))
    assert reported == [
        "native:LocalService 'postgres' (layer catalog, owner platform) breaks secrets-not-plaintext: environment "
        "variable S3_SECRET_KEY holds a credential in plain text; make the value a Pulumi secret (config --secret or "
        "pulumi.Output.secret)"
    ]


def test_pack_reads_the_stack_config_the_engine_passes():
    import policies.__main__ as pack

    saved = dict(pack.STATE)
    try:
        pack.STATE.update(stack="cloud", context=None, context_error=None,
                          config={"lakehouse:platform": json.dumps(stack_platform("cloud")), "aws:region": "eu-west-1"})
        context = pack.stack_context(None)
        assert context is not None and context.stack == "cloud" and context.backup_retention_days == 14
        explicit = pack.stack_context({"context": pack_config.context_for_stack("lab")})
        assert explicit is not None and explicit.stack == "lab"
    finally:
        pack.STATE.clear()
        pack.STATE.update(saved)


def test_policy_pack_project_file_points_at_the_project_virtualenv():
    project = yaml.safe_load((ROOT / "policies/PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    venv = (ROOT / "policies" / project["runtime"]["options"]["virtualenv"]).resolve()
    assert venv == (ROOT / ".venv").resolve()


# --------------------------------------------------------------------------------------------
# The pack under the real CLI (when the project-local Pulumi is built)
# --------------------------------------------------------------------------------------------

SMOKE_PROGRAM = '''
import pulumi, pulumi.dynamic

class Provider(pulumi.dynamic.ResourceProvider):
    serialize_as_secret_always = False
    def create(self, props):
        return pulumi.dynamic.CreateResult("x", props)

class LocalService(pulumi.dynamic.Resource, module="native", name="LocalService"):
    def __init__(self, name, props, opts=None):
        super().__init__(Provider(), name, props, opts)

class Catalog(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("platform:layers:Catalog", name, None, None)
        labels = {"lakehouse.platform": "lakehouse", "lakehouse.layer": "catalog", "lakehouse.owner": "platform",
                  "lakehouse.service": "rest-fixture"}
        LocalService("rest-fixture", {
            "service": "rest-fixture", "labels": labels, "data_dir": "/tmp/smoke/rest-fixture",
            "health": {"kind": "tcp", "port": 8181}, "memory_budget_bytes": 512 * 1024 * 1024,
            "env": {"CATALOG_URI": "jdbc:sqlite::memory:", "AWS_SECRET_ACCESS_KEY": pulumi.Output.secret("s3cr3t"),
                    "POSTGRES_PASSWORD": "plain-password"},
        }, pulumi.ResourceOptions(parent=self))
        self.register_outputs({})

Catalog("lakehouse-catalog")
'''


@pytest.mark.toolchain
def test_pack_loads_and_refuses_in_a_real_preview(tmp_path):
    pulumi_bin = ROOT / ".tools/bin/pulumi"
    if not pulumi_bin.exists():
        pytest.skip("the project-local Pulumi CLI (.tools/bin/pulumi, scripts/install-pulumi.sh) is not built")
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(textwrap.dedent(f"""\
        name: {PROJECT}
        runtime:
          name: python
          options:
            toolchain: pip
            virtualenv: {ROOT / '.venv'}
        """))
    (project / "__main__.py").write_text(SMOKE_PROGRAM)
    (project / "Pulumi.policy-smoke.yaml").write_text(
        yaml.safe_dump({"config": {"lakehouse:platform": stack_platform("native")}}))
    env = isolated_pulumi_env(tmp_path, "policy-smoke")
    (tmp_path / "state").mkdir()
    subprocess.run([str(pulumi_bin), "stack", "init", "policy-smoke"], cwd=project, env=env, check=True,
                   capture_output=True, timeout=120)
    done = subprocess.run([str(pulumi_bin), "preview", "--stack", "policy-smoke", "--policy-pack", str(ROOT / "policies"),
                           "--non-interactive", "--color", "never"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0, output
    assert "lakehouse-contracts" in output
    assert ("native:LocalService 'rest-fixture' (layer catalog, owner platform) breaks catalog-no-in-memory-sqlite: "
            "CATALOG_URI=jdbc:sqlite::memory: is an in-memory SQLite database") in output
    assert ("native:LocalService 'rest-fixture' (layer catalog, owner platform) breaks secrets-not-plaintext: "
            "environment variable POSTGRES_PASSWORD holds a credential in plain text") in output
    # A secret (Output.secret) is not plain text: the pack keeps the engine's secret wrapper.
    assert "AWS_SECRET_ACCESS_KEY holds" not in output
    # The stack config reached the pack: no "did not reach the policy pack" complaint.
    assert "did not reach the policy pack" not in output
    shutil.rmtree(tmp_path / "state", ignore_errors=True)


@pytest.mark.toolchain
def test_real_preview_of_the_native_stack_passes_and_a_changed_table_is_refused(tmp_path, request):
    """`pulumi preview --policy-pack policies` on the project itself (native: no provider plugin needed).

    On its own block of ports (infra.stack.isolated), so a user's `make up` platform running on this
    host does not stop the program; needs the CLI and the artifact cache (`make bootstrap`).
    """
    pulumi_bin = ROOT / ".tools/bin/pulumi"
    if not pulumi_bin.exists():
        pytest.skip("the project-local Pulumi CLI (.tools/bin/pulumi, scripts/install-pulumi.sh) is not built")
    from infra.config import load_platform as load
    from infra.stack.isolated import isolated_platform

    platform, _ = isolated_platform("preview")
    config_file = tmp_path / "Pulumi.policy-check.yaml"
    config_file.write_text(yaml.safe_dump({"config": {"lakehouse:platform": platform}}))
    env = isolated_pulumi_env(tmp_path, "policy-check")
    (tmp_path / "state").mkdir()
    # `stack init` writes the stack's encryption salt into Pulumi.policy-check.yaml at the project root.
    request.addfinalizer(lambda: (ROOT / "Pulumi.policy-check.yaml").unlink(missing_ok=True))
    subprocess.run([str(pulumi_bin), "stack", "init", "policy-check"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=120)

    def preview(*extra: str) -> tuple[int, str]:
        done = subprocess.run([str(pulumi_bin), "preview", "--stack", "policy-check", "--config-file", str(config_file),
                               "--policy-pack", "policies", "--non-interactive", "--color", "never", *extra],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        return done.returncode, " ".join((done.stdout + done.stderr).split())

    code, output = preview()
    assert code == 0 and "✅ lakehouse-contracts" in output, output
    assert "pulumi-python:dynamic/native:LocalService rest-fixture create" in output

    # The same resources against an ownership table that hands the catalog to another team.
    changed = copy.deepcopy(stack_platform("native"))
    changed.setdefault("layers", {})["catalog"] = {"owner": "catalog team"}
    policy_config = {name: {"enforcementLevel": level,
                            "context": pack_config.stack_context(load(changed), "native")}
                     for name, level in pack_config.levels_for("native").items()}
    (tmp_path / "policy.json").write_text(json.dumps(policy_config))
    code, output = preview("--policy-pack-config", str(tmp_path / "policy.json"))
    assert code != 0, output
    assert ("native:LocalService 'postgres' (layer catalog, owner platform) breaks layer-ownership: label "
            "lakehouse.owner='platform' but the ownership table of stack native says service postgres is owned by "
            "'catalog team'") in output
