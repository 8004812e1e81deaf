"""The cloud stack (target aws) under Pulumi mocks: the real resource graph, checked for its promises.

Each run evaluates the whole program (spec, seven layers, aws target) with Pulumi.cloud.yaml's
``lakehouse:platform`` object; only the AWS provider is mocked. Assertions read what the program
registered: inputs, tags, parents.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pulumi_aws as aws
import pytest
import yaml

from infra.config import ConfigError, load_platform
from infra.services import registry
from infra.services.kafka_connect import artifact as kafka_connect_artifact
from infra.spec import LAYER_NAMES, Layer
from infra.spec import eventbridge_cron as scheduler_cron
from infra.targets.aws.common import tag_value
from tests.support.harness import SECRET_SIG, ProgramRun, Registered, cached_run, run_program

ROOT = Path(__file__).resolve().parents[1]
SECRET_MARKER = "4dabf18193072939515e22adb298388d"  # key Pulumi's wire format puts next to SECRET_SIG
LAYER_COMPONENTS = {f"lakehouse-{layer}": layer for layer in LAYER_NAMES}


def cloud_platform() -> dict[str, Any]:
    """Pulumi.cloud.yaml's ``lakehouse:platform`` object (a fresh copy)."""
    document = yaml.safe_load((ROOT / "Pulumi.cloud.yaml").read_text())
    return copy.deepcopy(document["config"]["lakehouse:platform"])


def with_changes(**aws_changes: Any) -> dict[str, Any]:
    platform = cloud_platform()
    platform["aws"] = {**platform.get("aws", {}), **aws_changes}
    return platform


@pytest.fixture(scope="module")
def cloud() -> ProgramRun:
    return cached_run("cloud", cloud_platform())


@pytest.fixture(scope="module")
def five_workers_no_spark() -> ProgramRun:
    platform = with_changes(trino_workers=5, spark_emr_serverless=False)
    platform["storage"]["replica_bucket"] = False
    return cached_run("cloud", platform)


@pytest.fixture(scope="module")
def streaming() -> ProgramRun:
    platform = with_changes(kafka_msk=True, replica_region="eu-central-1")
    platform["observability"] = {"alarm_email": "oncall@example.com"}
    return cached_run("cloud", platform)


ALL_RUNS = ["cloud", "five_workers_no_spark", "streaming"]


# -- helpers --------------------------------------------------------------------------------------


@cache
def accepts_tags(token: str) -> bool:
    """Whether the pulumi-aws resource class of a type token takes a ``tags`` input."""
    module, name = token.split(":")[1].split("/")[0], token.split(":")[2]
    cls = getattr(aws if module == "index" else getattr(aws, module), name)
    return "tags" in inspect.signature(cls._internal_init).parameters


def aws_resources(run: ProgramRun) -> list[Registered]:
    return [r for r in run.resources if r.type.startswith("aws:")]


def the(run: ProgramRun, token: str) -> Registered:
    found = run.of_type(token)
    assert len(found) == 1, f"expected one {token}, found {[r.name for r in found]}"
    return found[0]


def named(run: ProgramRun, token: str, name: str) -> Registered:
    found = [r for r in run.of_type(token) if r.name == name]
    assert len(found) == 1, f"expected one {token} named {name}"
    return found[0]


BUCKET = "aws:s3/bucket:Bucket"
TASK = "aws:ecs/taskDefinition:TaskDefinition"


def resource_id(resource: Registered) -> str:
    """The id the mocks give a resource (what other resources' inputs reference)."""
    return f"{resource.name}-id"


def containers(run: ProgramRun) -> list[tuple[str, dict[str, Any]]]:
    return [(task.name, c) for task in run.of_type("aws:ecs/taskDefinition:TaskDefinition")
            for c in json.loads(task.inputs["containerDefinitions"])]


def ecs_service(run: ProgramRun, name: str) -> Registered:
    found = [r for r in run.of_type("aws:ecs/service:Service") if r.inputs.get("name") == name]
    assert len(found) == 1, f"expected one ECS service {name!r}"
    return found[0]


def buckets_of(run: ProgramRun, token: str) -> dict[str, Registered]:
    """Bucket sub-resources (versioning, encryption, ...) keyed by the bucket id they configure."""
    return {r.inputs["bucket"]: r for r in run.of_type(token)}


# -- storage --------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_no_bucket_is_public_and_every_bucket_is_hardened(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    buckets = run.of_type("aws:s3/bucket:Bucket")
    assert buckets
    blocks = buckets_of(run, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    ownership = buckets_of(run, "aws:s3/bucketOwnershipControls:BucketOwnershipControls")
    policies = buckets_of(run, "aws:s3/bucketPolicy:BucketPolicy")
    versioning = buckets_of(run, "aws:s3/bucketVersioning:BucketVersioning")
    for bucket in buckets:
        bid = resource_id(bucket)
        block = blocks[bid].inputs
        assert (block["blockPublicAcls"], block["blockPublicPolicy"], block["ignorePublicAcls"],
                block["restrictPublicBuckets"]) == (True, True, True, True), bucket.name
        assert ownership[bid].inputs["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
        assert versioning[bid].inputs["versioningConfiguration"]["status"] == "Enabled"
        statements = json.loads(policies[bid].inputs["policy"])["Statement"]
        assert {"Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}}.items() <= statements[0].items()
        assert all(s["Effect"] == "Deny" for s in statements), "a bucket policy must never grant access"


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_lifecycle_never_expires_current_objects(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    spec = load_platform(cloud_platform())
    lifecycles = run.of_type("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration")
    assert len(lifecycles) == len(run.of_type("aws:s3/bucket:Bucket"))
    for lifecycle in lifecycles:
        for rule in lifecycle.inputs["rules"]:
            assert "expiration" not in rule, f"{lifecycle.name}: rule {rule['id']} expires current objects"
            assert "transitions" not in rule
            assert set(rule) <= {"id", "status", "filter", "noncurrentVersionExpiration",
                                 "abortIncompleteMultipartUpload"}
        by_id = {rule["id"]: rule for rule in lifecycle.inputs["rules"]}
        assert by_id["expire-noncurrent-versions"]["noncurrentVersionExpiration"] == {
            "noncurrentDays": spec.storage.noncurrent_version_expiration_days}
        assert by_id["abort-incomplete-multipart-uploads"]["abortIncompleteMultipartUpload"] == {
            "daysAfterInitiation": spec.storage.abort_incomplete_multipart_days}


def test_warehouse_bucket_is_the_configured_one(cloud: ProgramRun) -> None:
    warehouse = named(cloud, BUCKET, "lakehouse-warehouse")
    assert warehouse.inputs["bucket"] == "lakehouse-warehouse-prod"
    assert warehouse.inputs["forceDestroy"] is False
    assert cloud.outputs["bucket"] == "lakehouse-warehouse-prod"


# -- encryption -----------------------------------------------------------------------------------


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_encryption_everywhere(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    keys = {r.inputs.get("region", "eu-west-1"): f"arn:aws:kms:eu-west-1:123456789012:{r.name}"
            for r in run.of_type("aws:kms/key:Key")}
    platform_key = keys["eu-west-1"]
    for key in run.of_type("aws:kms/key:Key"):
        assert key.inputs["enableKeyRotation"] is True
    sse = buckets_of(run, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    for bucket in run.of_type("aws:s3/bucket:Bucket"):
        (rule,) = sse[resource_id(bucket)].inputs["rules"]
        default = rule["applyServerSideEncryptionByDefault"]
        assert default["sseAlgorithm"] == "aws:kms"
        assert default["kmsMasterKeyId"] == keys[bucket.inputs.get("region", "eu-west-1")]
        assert rule["bucketKeyEnabled"] is True
    database = the(run, "aws:rds/instance:Instance").inputs
    assert database["storageEncrypted"] is True and database["kmsKeyId"] == platform_key
    assert database["performanceInsightsKmsKeyId"] == platform_key
    log_groups = run.of_type("aws:cloudwatch/logGroup:LogGroup")
    assert log_groups
    for group in log_groups:
        assert group.inputs["kmsKeyId"] == platform_key, group.name
        assert group.inputs["retentionInDays"] == 30
    assert the(run, "aws:backup/vault:Vault").inputs["kmsKeyArn"] == platform_key
    for secret in run.of_type("aws:secretsmanager/secret:Secret"):
        assert secret.inputs["kmsKeyId"] == platform_key
    for topic in run.of_type("aws:sns/topic:Topic"):
        assert topic.inputs["kmsMasterKeyId"] == platform_key
    for queue in run.of_type("aws:sqs/queue:Queue"):
        assert queue.inputs["kmsMasterKeyId"] == platform_key
    for cluster in run.of_type("aws:msk/cluster:Cluster"):
        encryption = cluster.inputs["encryptionInfo"]
        assert encryption["encryptionAtRestKmsKeyArn"] == platform_key
        assert encryption["encryptionInTransit"] == {"clientBroker": "TLS", "inCluster": True}


def test_every_log_source_writes_to_an_encrypted_group_that_exists_first(cloud: ProgramRun) -> None:
    groups = {g.inputs["name"] for g in cloud.of_type("aws:cloudwatch/logGroup:LogGroup")}
    for task, container in containers(cloud):
        assert container["logConfiguration"]["options"]["awslogs-group"] in groups, task
    database = the(cloud, "aws:rds/instance:Instance").inputs
    for export in database["enabledCloudwatchLogsExports"]:
        assert f"/aws/rds/instance/{database['identifier']}/{export}" in groups
    spark = the(cloud, "aws:emrserverless/application:Application").inputs
    assert spark["monitoringConfiguration"]["cloudwatchLoggingConfiguration"]["logGroupName"] in groups
    # Log groups are registered before the resources that write to them (forward dependency resolved).
    order = [r.type for r in cloud.resources]
    last_group = max(i for i, t in enumerate(order) if t == "aws:cloudwatch/logGroup:LogGroup")
    for token in ("aws:ecs/service:Service", "aws:rds/instance:Instance", "aws:emrserverless/application:Application"):
        assert min(i for i, t in enumerate(order) if t == token) > last_group, token


# -- catalog database -----------------------------------------------------------------------------


def test_rds_private_backed_up_and_protected(cloud: ProgramRun) -> None:
    spec = load_platform(cloud_platform())
    database = the(cloud, "aws:rds/instance:Instance").inputs
    assert database["publiclyAccessible"] is False
    assert database["backupRetentionPeriod"] >= spec.recovery.backup_retention_days == 14
    assert database["deletionProtection"] is True
    assert database["skipFinalSnapshot"] is False
    assert database["manageMasterUserPassword"] is True
    assert "password" not in database
    assert database["engine"] == "postgres"
    assert database["engineVersion"] == spec.services["postgres"].version.split(".")[0] == "18"
    assert database["multiAz"] is True
    subnets = the(cloud, "aws:rds/subnetGroup:SubnetGroup")
    assert database["dbSubnetGroupName"] == subnets.inputs["name"]
    private = [resource_id(s) for s in cloud.of_type("aws:ec2/subnet:Subnet") if "-private-" in s.name]
    assert sorted(subnets.inputs["subnetIds"]) == sorted(private)
    for subnet in cloud.of_type("aws:ec2/subnet:Subnet"):
        assert subnet.inputs["mapPublicIpOnLaunch"] is False
    parameters = {p["name"]: p["value"] for p in the(cloud, "aws:rds/parameterGroup:ParameterGroup").inputs["parameters"]}
    assert parameters["rds.force_ssl"] == "1"
    assert the(cloud, "aws:rds/parameterGroup:ParameterGroup").inputs["family"] == "postgres18"


def test_backup_plan_keeps_at_least_the_promised_retention(cloud: ProgramRun) -> None:
    (rule,) = the(cloud, "aws:backup/plan:Plan").inputs["rules"]
    assert rule["lifecycle"]["deleteAfter"] >= 14
    assert rule["targetVaultName"] == the(cloud, "aws:backup/vault:Vault").inputs["name"]
    selection = the(cloud, "aws:backup/selection:Selection").inputs
    assert selection["resources"] == ["arn:aws:rds:eu-west-1:123456789012:lakehouse-catalog-db"]
    assert selection["planId"] == resource_id(the(cloud, "aws:backup/plan:Plan"))


def test_catalogs_reach_the_database_only_through_their_security_group(cloud: ProgramRun) -> None:
    database = the(cloud, "aws:rds/instance:Instance").inputs
    (db_sg,) = database["vpcSecurityGroupIds"]
    catalog_sgs = {sg for name in ("polaris", "lakekeeper")
                   for sg in ecs_service(cloud, name).inputs["networkConfiguration"]["securityGroups"]}
    assert len(catalog_sgs) == 1
    (catalog_sg,) = catalog_sgs
    assert catalog_sg != db_sg
    ingress = [r.inputs for r in cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs["securityGroupId"] == db_sg]
    assert ingress, "the database admits nobody"
    for rule in ingress:
        assert rule["referencedSecurityGroupId"] == catalog_sg
        assert rule["fromPort"] == rule["toPort"] == 5432
        assert not {"cidrIpv4", "cidrIpv6", "prefixListId"} & set(rule)
    for group in cloud.of_type("aws:ec2/securityGroup:SecurityGroup"):
        assert not group.inputs.get("ingress"), f"{group.name}: inline ingress bypasses the reviewed rules"
    # No ingress anywhere is open to a CIDR: every hop is admitted from a security group.
    for rule in cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"):
        assert "referencedSecurityGroupId" in rule.inputs and "cidrIpv4" not in rule.inputs, rule.name
    # The catalog port admits only the engines and the internal load balancer.
    engines = ecs_service(cloud, "trino").inputs["networkConfiguration"]["securityGroups"][0]
    balancer = the(cloud, "aws:lb/loadBalancer:LoadBalancer").inputs["securityGroups"][0]
    sources = {r.inputs["referencedSecurityGroupId"] for r in
               cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs["securityGroupId"] == catalog_sg and r.inputs["fromPort"] == 8181}
    assert sources == {engines, balancer}


def test_streaming_adds_only_debezium_to_the_database(streaming: ProgramRun) -> None:
    (db_sg,) = the(streaming, "aws:rds/instance:Instance").inputs["vpcSecurityGroupIds"]
    sources = {r.inputs["referencedSecurityGroupId"] for r in
               streaming.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs["securityGroupId"] == db_sg}
    assert sources == {"lakehouse-catalogs-id", "lakehouse-connect-id"}


# -- catalogs on ECS ------------------------------------------------------------------------------


def test_catalogs_run_on_fargate_behind_an_internal_load_balancer(cloud: ProgramRun) -> None:
    balancer = the(cloud, "aws:lb/loadBalancer:LoadBalancer").inputs
    assert balancer["internal"] is True
    assert balancer["loadBalancerType"] == "application"
    groups = {r.name: r.inputs for r in cloud.of_type("aws:lb/targetGroup:TargetGroup")}
    assert groups["lakehouse-polaris"]["healthCheck"]["path"] == "/q/health"
    assert groups["lakehouse-polaris"]["healthCheck"]["port"] == "8182"
    assert groups["lakehouse-lakekeeper"]["healthCheck"]["path"] == "/health"
    assert groups["lakehouse-lakekeeper"]["healthCheck"]["port"] == "traffic-port"
    rules = {r.name: r.inputs for r in cloud.of_type("aws:lb/listenerRule:ListenerRule")}
    assert rules["lakehouse-polaris"]["conditions"] == [{"hostHeader": {"values": ["polaris.lakehouse.internal"]}}]
    for name in ("polaris", "lakekeeper"):
        service = ecs_service(cloud, name).inputs
        assert service["launchType"] == "FARGATE"
        assert service["desiredCount"] == 2
        assert service["networkConfiguration"]["assignPublicIp"] is False
        assert service["loadBalancers"][0]["targetGroupArn"].endswith(f"lakehouse-{name}")
        assert service["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    images = {c["name"]: c["image"] for _, c in containers(cloud)}
    spec = load_platform(cloud_platform())
    for name in ("polaris", "lakekeeper", "polaris-bootstrap", "lakekeeper-migrate", "trino"):
        assert images[name] == spec.services[name].image
    memory = {c["name"]: c["memory"] for _, c in containers(cloud)}
    assert memory["polaris"] == 1024 and memory["lakekeeper"] == 256  # the service budgets


def test_jobs_are_one_off_task_definitions_in_order(cloud: ProgramRun) -> None:
    jobs = cloud.outputs["catalog_jobs"]
    # Each catalog's setup job (catalog, warehouse) after its server's bootstrap or migration.
    assert sorted(jobs, key=lambda j: jobs[j]["order"]) == [
        "postgres-init", "polaris-bootstrap", "polaris-catalog", "lakekeeper-migrate", "lakekeeper-warehouse"]
    for job in jobs.values():
        assert job["command"].startswith(f"aws ecs run-task --cluster lakehouse-cloud-catalog "
                                         f"--task-definition {job['task_definition']}")
    services = {r.inputs.get("name") for r in cloud.of_type("aws:ecs/service:Service")}
    assert not services & set(jobs), "a job must not run as a long-lived service"


def test_secrets_never_in_task_environment(cloud: ProgramRun, streaming: ProgramRun) -> None:
    secret_values = {item.lab_default for d in registry() for item in d.secrets if item.lab_default}
    for run in (cloud, streaming):
        for task, container in containers(run):
            plain = json.dumps({k: container.get(k) for k in ("environment", "command", "entryPoint")})
            for value in secret_values:
                assert value not in plain, f"{task}/{container['name']}: a secret value in plain text"
            assert "${secret:" not in plain
            for variable in container["environment"]:
                assert not any(word in variable["name"] for word in ("PASSWORD", "SECRET", "ENCRYPTION_KEY")), (
                    f"{task}/{container['name']}: {variable['name']} belongs in secrets")
            for entry in container["secrets"]:
                assert entry["valueFrom"].startswith("arn:aws:secretsmanager:")
    by_name = {c["name"]: c for _, c in containers(cloud)}
    polaris_secrets = {s["name"]: s["valueFrom"] for s in by_name["polaris"]["secrets"]}
    assert set(polaris_secrets) == {"QUARKUS_DATASOURCE_PASSWORD",
                                    "polaris.authentication.token-broker.symmetric-key.secret"}
    assert polaris_secrets["QUARKUS_DATASOURCE_PASSWORD"].endswith(":password::")  # the RDS-managed secret
    # Every replica signs and checks tokens with the one key from Secrets Manager.
    assert polaris_secrets["polaris.authentication.token-broker.symmetric-key.secret"].endswith(":secret:lakehouse-polaris-token-key-AbCdEf")
    assert {s["name"] for s in by_name["lakekeeper"]["secrets"]} == {"LAKEKEEPER__PG_PASSWORD",
                                                                     "LAKEKEEPER__PG_ENCRYPTION_KEY"}
    # The TLS key and the password hashes are whole secrets written to files at start, never in the task's text.
    assert {s["name"] for s in by_name["trino"]["secrets"]} == {"POLARIS_ROOT_SECRET", "TRINO_SHARED_SECRET",
                                                                "FILE_TRINO_PASSWORD_DB", "FILE_TRINO_TLS_PEM"}
    assert 'printf \'%s\' "$FILE_TRINO_TLS_PEM" > /etc/trino/tls/trino.pem' in by_name["trino"]["command"][0]
    bootstrap = by_name["polaris-bootstrap"]
    assert "${POLARIS_ROOT_SECRET}" in bootstrap["command"][0]
    # Secret values reach Secrets Manager as Pulumi secrets (encrypted in state).
    for version in cloud.of_type("aws:secretsmanager/secretVersion:SecretVersion"):
        assert version.inputs["secretString"][SECRET_MARKER] == SECRET_SIG
    connector = streaming.named("lakehouse-bookshop-cdc").inputs["connectorConfiguration"]
    assert connector["database.password"] == "${secretsmanager:rds!db-lakehouse-catalog-db:password}"


def test_execution_roles_read_only_their_own_secrets(cloud: ProgramRun) -> None:
    policies = {r.name: json.loads(r.inputs["policy"]) for r in cloud.of_type("aws:iam/rolePolicy:RolePolicy")}
    trino = {s["Sid"]: s for s in policies["lakehouse-trino-execution"]["Statement"]}
    assert sorted(trino["ReadOwnSecrets"]["Resource"]) == [
        f"arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-{name}-AbCdEf"
        for name in ("polaris-root-secret", "trino-password-db", "trino-shared-secret", "trino-tls-pem")]
    polaris = {s["Sid"]: s for s in policies["lakehouse-polaris-execution"]["Statement"]}
    assert sorted(polaris["ReadOwnSecrets"]["Resource"]) == [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-token-key-AbCdEf",
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!db-lakehouse-catalog-db-AbCdEf"]
    # The maintenance task: the platform identity's catalog credential and Trino password, Trino's certificate
    # (secrets of the task's own, made for it: the TLS key beside that certificate is not among them).
    maintenance = {s["Sid"]: s for s in policies["lakehouse-maintenance-execution"]["Statement"]}
    assert sorted(maintenance["ReadOwnSecrets"]["Resource"]) == [
        f"arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-{name}-AbCdEf"
        for name in ("polaris-root-secret", "trino-password-platform", "trino-tls-cert")]


# -- governance -----------------------------------------------------------------------------------


def test_only_the_catalogs_may_assume_the_vending_role_and_it_reaches_only_the_warehouse(cloud: ProgramRun) -> None:
    vending = cloud.named("lakehouse-credential-vending").inputs
    (trust,) = json.loads(vending["assumeRolePolicy"])["Statement"]
    assert sorted(trust["Principal"]["AWS"]) == [
        "arn:aws:iam:eu-west-1:123456789012:lakehouse-lakekeeper-task",
        "arn:aws:iam:eu-west-1:123456789012:lakehouse-polaris-task",
    ]
    policy = json.loads(cloud.named("lakehouse-credential-vending-warehouse").inputs["policy"])
    s3_resources = {r for s in policy["Statement"] if s["Action"][0].startswith("s3:")
                    for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])}
    assert s3_resources == {"arn:aws:s3:::lakehouse-warehouse-prod", "arn:aws:s3:::lakehouse-warehouse-prod/*"}
    key_policy = json.loads(the(cloud, "aws:kms/key:Key").inputs["policy"])
    sids = {s["Sid"]: s for s in key_policy["Statement"]}
    assert sids["AccountAdministers"]["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
    assert sids["VendingRoleUsesKey"]["Principal"] == {
        "AWS": "arn:aws:iam:eu-west-1:123456789012:lakehouse-credential-vending"}
    # Engines hold no AWS rights of their own: table data only through vended credentials. The maintenance
    # task reads (metadata, listings) as the reader identity; its rewrites are Trino's.
    tasks = {t.name: t.inputs for t in cloud.of_type("aws:ecs/taskDefinition:TaskDefinition")}
    for name in ("lakehouse-trino", "lakehouse-trino-worker"):
        assert "taskRoleArn" not in tasks[name]
    assert tasks["lakehouse-maintenance"]["taskRoleArn"] == "arn:aws:iam:eu-west-1:123456789012:lakehouse-identity-reader"
    trino_catalogs = cloud.outputs["profiles"]["services"]["trino_catalogs"]
    for body in trino_catalogs.values():
        assert "s3.aws-access-key" not in body and "vended-credentials-enabled=true" in body


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_every_taggable_resource_carries_its_layer_and_owner(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    spec = load_platform(cloud_platform())
    checked = 0
    for resource in aws_resources(run):
        if not accepts_tags(resource.type):
            continue
        tags = resource.inputs.get("tags") or {}
        assert "lakehouse.layer" in tags and "lakehouse.owner" in tags, f"{resource.type} {resource.name} untagged"
        layer = tags["lakehouse.layer"]
        parent = run.layer_of(resource)
        assert parent is not None and layer == LAYER_COMPONENTS[parent], f"{resource.name}: tagged {layer}, under {parent}"
        service = tags.get("lakehouse.service")
        # The owner rule (infra.labels): the layer's owner, unless a service *of that layer* has its own.
        svc = spec.services.get(service) if service else None
        same_layer = svc is not None and svc.layer is Layer(layer)
        expected = spec.owner_of(service) if same_layer else spec.layers[Layer(layer)].owner
        assert tags["lakehouse.owner"] == tag_value(expected), resource.name
        checked += 1
    assert checked > 50
    # The governance layer's task role of a catalog is governance's; its service tag names the catalog.
    role = next(r for r in aws_resources(run) if r.type == "aws:iam/role:Role" and r.name == "lakehouse-polaris-task")
    assert role.inputs["tags"]["lakehouse.owner"] == tag_value(spec.layers[Layer.GOVERNANCE].owner)
    assert role.inputs["tags"]["lakehouse.service"] == "polaris"
    provider = the(run, "pulumi:providers:aws").inputs
    assert provider["region"] == "eu-west-1"
    assert json.loads(provider["defaultTags"])["tags"] == {"lakehouse.platform": "lakehouse",
                                                           "lakehouse.stack": "cloud"}


def test_tag_values_are_what_aws_accepts() -> None:
    assert tag_value("each engine's team") == "each engines team"
    assert tag_value("security, executed by platform") == "security executed by platform"
    assert tag_value("data engineering") == "data engineering"


@pytest.mark.parametrize("run_name", ALL_RUNS)
def test_every_resource_has_a_layer_component_parent(run_name: str, request: pytest.FixtureRequest) -> None:
    run: ProgramRun = request.getfixturevalue(run_name)
    components = [r for r in run.resources if r.type.startswith("platform:layers:")]
    assert sorted(r.name for r in components) == sorted(LAYER_COMPONENTS)
    for resource in run.resources:
        if resource in components:
            continue
        # Directly, or through the components that group a service's resources (platform:aws:*).
        assert run.layer_of(resource) in LAYER_COMPONENTS, f"{resource.type} {resource.name}: parent {resource.parent}"
    iam = [r for r in run.resources if r.type.startswith(("aws:iam/", "aws:kms/"))]
    assert iam and all(r.parent == "lakehouse-governance" for r in iam)


# -- compute --------------------------------------------------------------------------------------


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
    import base64
    import re

    script = container["command"][0]
    return "".join(base64.b64decode(b).decode() for b in re.findall(r"echo ([A-Za-z0-9+/=]+) \| base64 -d", script))


def test_trino_catalog_files_are_the_shared_ones(cloud: ProgramRun) -> None:
    (definition,) = json.loads(named(cloud, TASK, "lakehouse-trino").inputs["containerDefinitions"])
    files = _written_files(definition)
    for body in cloud.outputs["profiles"]["services"]["trino_catalogs"].values():
        assert body in files
    assert "iceberg.rest-catalog.uri=http://polaris.lakehouse.internal:8181/api/catalog" in files
    assert "node-scheduler.include-coordinator=false" in files


def container_of_task(run: ProgramRun, task: str) -> dict[str, Any]:
    (definition,) = json.loads(named(run, TASK, task).inputs["containerDefinitions"])
    return definition


def test_catalog_setup_jobs_name_the_vending_role_and_key_and_read_secrets_from_secrets_manager(
        cloud: ProgramRun) -> None:
    """Issue #13 item 4 on aws: the setup jobs get the ARNs Polaris and Lakekeeper must name, never a secret value."""
    vending = "arn:aws:iam:eu-west-1:123456789012:lakehouse-credential-vending"
    key = "arn:aws:kms:eu-west-1:123456789012:lakehouse-key"
    catalog = container_of_task(cloud, "lakehouse-polaris-catalog")
    assert catalog["image"] == "alpine/curl:8.21.0" and catalog["entryPoint"] == ["/bin/sh", "-c"]
    env = {e["name"]: e["value"] for e in catalog["environment"]}
    assert env == {"KMS_KEY_ARN": key, "POLARIS_CLIENT_ID": "root", "POLARIS_REALM": "POLARIS",
                   "POLARIS_URL": "http://polaris.lakehouse.internal:8181", "VENDING_ROLE_ARN": vending}
    assert catalog["secrets"] == [{"name": "POLARIS_CLIENT_SECRET",
                                   "valueFrom": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-root-secret-AbCdEf"}]
    assert '\\"roleArn\\":\\"$(json_escape "$VENDING_ROLE_ARN")\\"' in catalog["command"][0]
    warehouse = container_of_task(cloud, "lakehouse-lakekeeper-warehouse")
    env = {e["name"]: e["value"] for e in warehouse["environment"]}
    assert env == {"KMS_KEY_ARN": key, "LAKEKEEPER_URL": "http://lakekeeper.lakehouse.internal:8181",
                   "VENDING_ROLE_ARN": vending}
    assert warehouse["secrets"] == []
    # The jobs run in the catalogs' group and reach the catalogs through the load balancer.
    rules = cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert any(r.inputs["securityGroupId"] == "lakehouse-lb-id" and r.inputs["referencedSecurityGroupId"]
               == "lakehouse-catalogs-id" and r.inputs["fromPort"] == 8181 for r in rules)
    egress = cloud.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    assert any(r.inputs["securityGroupId"] == "lakehouse-catalogs-id" and r.inputs.get("referencedSecurityGroupId")
               == "lakehouse-lb-id" and r.inputs["fromPort"] == 8181 for r in egress)


def test_lakekeeper_may_use_its_task_identity_for_the_warehouse(cloud: ProgramRun) -> None:
    env = {e["name"]: e["value"] for e in container_of_task(cloud, "lakehouse-lakekeeper")["environment"]}
    assert env["LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS"] == "true"  # off by default: no warehouse without it
    assert env["LAKEKEEPER__S3_REQUIRE_EXTERNAL_ID_FOR_SYSTEM_CREDENTIALS"] == "false"


def test_polaris_replicas_share_one_token_key_and_support_s3_only(cloud: ProgramRun) -> None:
    """Issue #13 item 11: two tasks behind the load balancer, one signing key from Secrets Manager."""
    assert ecs_service(cloud, "polaris").inputs["desiredCount"] == 2
    definition = container_of_task(cloud, "lakehouse-polaris")
    env = {e["name"]: e["value"] for e in definition["environment"]}
    assert "-Dpolaris.authentication.token-broker.type=symmetric-key" in env["JAVA_OPTS_APPEND"]
    assert env['polaris.features."SUPPORTED_CATALOG_STORAGE_TYPES"'] == '["S3"]'
    secrets = {s["name"]: s["valueFrom"] for s in definition["secrets"]}
    assert secrets["polaris.authentication.token-broker.symmetric-key.secret"] == (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-polaris-token-key-AbCdEf")
    version = named(cloud, "aws:secretsmanager/secretVersion:SecretVersion", "lakehouse-polaris-token-key-value")
    assert version.inputs["secretString"] == {SECRET_MARKER: SECRET_SIG, "value": "test-polaris-token-signing-key"}


def test_spark_reaches_table_data_through_the_catalog_with_a_credential_from_secrets_manager(
        cloud: ProgramRun) -> None:
    """Issue #13 item 12: a usable credential (by reference), the scope and the vended-credentials header."""
    (defaults,) = the(cloud, "aws:emrserverless/application:Application").inputs["runtimeConfigurations"]
    props = defaults["properties"]
    holder = named(cloud, "aws:secretsmanager/secret:Secret", "lakehouse-spark-catalog-credential")
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-spark-catalog-credential-AbCdEf"
    assert props["spark.sql.catalog.lakehouse.credential"] == f"EMR.secret@{arn}"
    assert props["spark.sql.catalog.lakehouse.scope"] == "PRINCIPAL_ROLE:ALL"
    assert props["spark.sql.catalog.lakehouse.header.X-Iceberg-Access-Delegation"] == "vended-credentials"
    assert not any("{polaris_root_secret}" in str(v) or "test-polaris-root-secret" in str(v) for v in props.values())
    assert holder.inputs["kmsKeyId"] == "arn:aws:kms:eu-west-1:123456789012:lakehouse-key"
    version = named(cloud, "aws:secretsmanager/secretVersion:SecretVersion", "lakehouse-spark-catalog-credential-value")
    assert version.inputs["secretString"] == {SECRET_MARKER: SECRET_SIG, "value": "root:test-polaris-root-secret"}
    policy = json.loads(named(cloud, "aws:iam/rolePolicy:RolePolicy", "lakehouse-spark-job").inputs["policy"])
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert statements["ReadCatalogCredential"]["Resource"] == [arn]
    # No S3 rights of its own: table data only through the catalog's vended, prefix-scoped credentials.
    assert not any(str(a).startswith("s3:") for s in policy["Statement"] for a in s["Action"])


def test_spark_is_emr_serverless_only_when_asked(cloud: ProgramRun, five_workers_no_spark: ProgramRun) -> None:
    app = the(cloud, "aws:emrserverless/application:Application").inputs
    assert app["type"] == "spark"
    assert app["networkConfiguration"]["subnetIds"] == ["lakehouse-private-0-id", "lakehouse-private-1-id"]
    (defaults,) = app["runtimeConfigurations"]
    assert defaults["properties"]["spark.sql.catalog.lakehouse.uri"] == "http://polaris.lakehouse.internal:8181/api/catalog"
    assert not five_workers_no_spark.of_type("aws:emrserverless/application:Application")
    assert not five_workers_no_spark.of_type("aws:s3/bucketReplicationConfig:BucketReplicationConfig")
    assert not cloud.of_type("aws:msk/cluster:Cluster")


def test_kafka_is_msk_with_debezium_on_msk_connect(streaming: ProgramRun) -> None:
    cluster = the(streaming, "aws:msk/cluster:Cluster").inputs
    assert cluster["numberOfBrokerNodes"] == 2
    assert cluster["clientAuthentication"] == {"sasl": {"iam": True}, "unauthenticated": False}
    assert len(cluster["brokerNodeGroupInfo"]["clientSubnets"]) == 2
    connectors = {r.name: r.inputs for r in streaming.of_type("aws:mskconnect/connector:Connector")}
    assert set(connectors) == {"lakehouse-bookshop-cdc", "lakehouse-bookshop-iceberg"}  # the stack's streams.connectors
    cdc = connectors["lakehouse-bookshop-cdc"]["connectorConfiguration"]
    assert cdc["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert cdc["database.hostname"] == "postgres.lakehouse.internal"
    assert cdc["publication.name"] == "bookshop_cdc" and cdc["publication.autocreate.mode"] == "disabled"
    sink = connectors["lakehouse-bookshop-iceberg"]["connectorConfiguration"]
    assert sink["iceberg.catalog.uri"] == "http://polaris.lakehouse.internal:8181/api/catalog"
    assert sink["iceberg.catalog.credential"] == "root:${secretsmanager:lakehouse-polaris-root-secret:value}"
    assert sink["iceberg.kafka.sasl.mechanism"] == "AWS_MSK_IAM"  # the sink's own control-topic clients
    topics = {r.inputs["name"]: r.inputs for r in streaming.of_type("aws:msk/topic:Topic")}
    assert set(topics) == {"orders", "bookshop.public.orders", "iceberg-control"}
    assert {t["replicationFactor"] for t in topics.values()} == {2}


# -- orchestration, observability, recovery -------------------------------------------------------


def test_maintenance_runs_on_eventbridge_scheduler(cloud: ProgramRun) -> None:
    spec = load_platform(cloud_platform())
    schedules = cloud.of_type("aws:scheduler/schedule:Schedule")
    assert len(schedules) == len(spec.maintenance) == 2
    group = the(cloud, "aws:scheduler/scheduleGroup:ScheduleGroup").inputs
    assert group["tags"]["lakehouse.owner"] == "data engineering"
    for schedule, job in zip(schedules, spec.maintenance, strict=True):
        target = schedule.inputs["target"]
        assert schedule.inputs["scheduleExpression"] == scheduler_cron(job.schedule)
        assert schedule.inputs["groupName"] == group["name"]
        assert target["arn"] == "arn:aws:ecs:eu-west-1:123456789012:lakehouse-compute"
        assert target["ecsParameters"]["tags"]["lakehouse.owner"] == "data engineering"
        assert target["ecsParameters"]["tags"]["lakehouse.layer"] == "orchestration"
        assert target["deadLetterConfig"]["arn"].endswith("lakehouse-maintenance-dlq")
        overrides = json.loads(target["input"])["containerOverrides"][0]["environment"]
        assert overrides == [{"name": "MAINTENANCE_JOB", "value": job.action}]  # one job per action here


@pytest.mark.parametrize(("cron", "expected"), [
    ("0 3 * * *", "cron(0 3 * * ? *)"),
    ("30 2 * * 0", "cron(30 2 ? * SUN *)"),
    ("30 2 * * 7", "cron(30 2 ? * SUN *)"),
    ("0 4 * * 1-5", "cron(0 4 ? * MON-FRI *)"),
    ("*/15 * * * 6,0", "cron(0,15,30,45 * ? * SUN,SAT *)"),
    ("0 1 1 * *", "cron(0 1 1 * ? *)"),
    ("0 1 1-7,15 jan-mar *", "cron(0 1 1-7,15 1-3 ? *)"),
])
def test_scheduler_cron(cron: str, expected: str) -> None:
    assert scheduler_cron(cron) == expected


def test_alarms_on_catalog_health_reach_the_topic(cloud: ProgramRun, streaming: ProgramRun) -> None:
    topic = "arn:aws:sns:eu-west-1:123456789012:lakehouse-alarms"
    alarms = {r.name: r.inputs for r in cloud.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")}
    for catalog in ("polaris", "lakekeeper"):
        unhealthy = alarms[f"lakehouse-{catalog}-unhealthy"]
        assert unhealthy["metricName"] == "UnHealthyHostCount"
        assert unhealthy["dimensions"]["TargetGroup"] == f"targetgroup/lakehouse-{catalog}/abc"
        assert alarms[f"lakehouse-{catalog}-5xx"]["metricName"] == "HTTPCode_Target_5XX_Count"
    for alarm in alarms.values():
        assert alarm["alarmActions"] == [topic]
    assert not cloud.of_type("aws:sns/topicSubscription:TopicSubscription")
    subscription = the(streaming, "aws:sns/topicSubscription:TopicSubscription").inputs
    assert (subscription["protocol"], subscription["endpoint"]) == ("email", "oncall@example.com")


def test_replica_bucket_is_versioned_encrypted_blocked_and_replicated(cloud: ProgramRun,
                                                                      streaming: ProgramRun) -> None:
    replica = named(cloud, BUCKET, "lakehouse-warehouse-replica").inputs
    assert replica["bucket"] == "lakehouse-warehouse-prod-replica"
    (rule,) = the(cloud, "aws:s3/bucketReplicationConfig:BucketReplicationConfig").inputs["rules"]
    assert rule["status"] == "Enabled"
    assert rule["destination"]["bucket"] == "arn:aws:s3:eu-west-1:123456789012:lakehouse-warehouse-replica"
    assert rule["sourceSelectionCriteria"] == {"sseKmsEncryptedObjects": {"status": "Enabled"}}
    # Cross-region replica: its own bucket, key and configuration in the replica region.
    other = named(streaming, BUCKET, "lakehouse-warehouse-replica").inputs
    assert other["region"] == "eu-central-1"
    (rule,) = the(streaming, "aws:s3/bucketReplicationConfig:BucketReplicationConfig").inputs["rules"]
    assert rule["destination"]["encryptionConfiguration"]["replicaKmsKeyId"] == (
        "arn:aws:kms:eu-west-1:123456789012:lakehouse-replica-key")


def test_stack_outputs(cloud: ProgramRun) -> None:
    outputs = cloud.outputs
    assert outputs["target"] == "aws"
    assert outputs["catalog_urls"] == {"polaris": "http://polaris.lakehouse.internal:8181/api/catalog",
                                       "lakekeeper": "http://lakekeeper.lakehouse.internal:8181/catalog"}
    assert outputs["rds_endpoint"] == "lakehouse-catalog-db.abc123.eu-west-1.rds.amazonaws.com:5432"
    assert outputs["replica_bucket"] == "lakehouse-warehouse-prod-replica"
    assert outputs["service_namespace"] == "lakehouse.internal"
    assert outputs["profiles"]["host"]["pyiceberg"]["uri"] == "http://polaris.lakehouse.internal:8181/api/catalog"
    assert "s3.endpoint" not in outputs["profiles"]["host"]["pyiceberg"]
    dns = {r.inputs["name"] for r in cloud.of_type("aws:servicediscovery/service:Service")}
    assert dns == {"postgres", "polaris", "lakekeeper", "trino"}


# -- config validation ----------------------------------------------------------------------------


def config_errors(platform: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_platform(platform, source="Pulumi.cloud.yaml")
    return caught.value.errors


def test_the_rest_fixture_is_refused_on_aws() -> None:
    platform = cloud_platform()
    platform["services"]["rest-fixture"]["enabled"] = True
    platform["services"]["seaweedfs"]["enabled"] = True  # its store, so the fixture's own refusal is what fails
    allowed = ("disable it. Allowed on aws: postgres, polaris, lakekeeper, trino, lakehouse-exporter, prometheus, "
               "flink-jobmanager, maintenance-scheduler, catalog-backup")
    assert config_errors(platform) == [
        f"lakehouse:platform.services.seaweedfs.enabled: seaweedfs does not run on the aws target (on aws the store "
        f"is S3 itself); {allowed}",
        f"lakehouse:platform.services.rest-fixture.enabled: rest-fixture does not run on the aws target (the REST "
        f"fixture is a test server with SQLite behind it; use polaris or lakekeeper); {allowed}",
    ]


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p["aws"].update(region="mars-north-1"),
     "lakehouse:platform.aws.region: 'mars-north-1' is not an AWS region; use a region code such as eu-west-1 "
     "or us-east-1"),
    (lambda p: p["aws"].update(trino_workers=0),
     "lakehouse:platform.aws.trino_workers: 0 workers cannot run a query: the coordinator only plans; "
     "set at least 1 Trino worker"),
    (lambda p: p["layers"]["compute"].update(owner=" "),
     "lakehouse:platform.layers.compute.owner: every layer needs an owner: name the team that answers for it"),
    (lambda p: p["aws"].update(kafka_msk=True, msk_broker_count=3),
     "lakehouse:platform.aws.msk_broker_count: 3 brokers cannot spread evenly over 2 availability zones; "
     "use a multiple of 2"),
    (lambda p: p["aws"].update(vpc_cidr="8.8.0.0/16"),
     "lakehouse:platform.aws.vpc_cidr: '8.8.0.0/16' must be a private IPv4 network from /16 to /22 "
     "(an eighth of it per subnet, per AZ)"),
    (lambda p: p["aws"].update(trino_worker_cpu=2048, trino_worker_memory_mb=2048),
     "lakehouse:platform.aws.trino_worker_memory_mb: 2048 does not fit 2048 CPU units on Fargate; "
     "allowed: 4096 to 16384 in steps of 1024"),
    (lambda p: p["aws"].update(trino_worker_cpu=3000),
     "lakehouse:platform.aws.trino_worker_cpu: 3000 is not a Fargate CPU size; allowed: 256, 512, 1024, 2048, "
     "4096, 8192, 16384"),
    (lambda p: p["storage"].update(region="us-east-1"),
     "lakehouse:platform.storage.region: 'us-east-1' differs from aws.region 'eu-west-1'; on aws the bucket lives "
     "in aws.region, so leave storage.region unset or make them equal"),
    (lambda p: p["services"]["kafka"].update(enabled=True),
     "lakehouse:platform.services.kafka.enabled: kafka does not run on the aws target (on aws Kafka runs as "
     "Amazon MSK: set aws.kafka_msk: true instead); disable it. Allowed on aws: postgres, polaris, lakekeeper, trino, "
     "lakehouse-exporter, prometheus, flink-jobmanager, maintenance-scheduler, catalog-backup"),
    (lambda p: p["aws"].update(log_retention_days=10),
     "lakehouse:platform.aws.log_retention_days: 10 is not a CloudWatch retention; allowed: 1, 3, 5, 7, 14, 30, "
     "60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653"),
    (lambda p: p["services"].update(trino={"enabled": False}),
     "lakehouse:platform.maintenance: on aws maintenance runs through Trino (its Iceberg procedures, from "
     "EventBridge's maintenance tasks); "
     "enable services.trino or remove maintenance"),
    (lambda p: p["maintenance"].append({"action": "rewrite_manifests", "schedule": "0 5 1 * 1"}),
     "lakehouse:platform.maintenance.2.schedule: '0 5 1 * 1' restricts both the day of month and the day of week "
     "(cron fires when either matches); EventBridge Scheduler accepts only one of them: set the other to *, or "
     "declare two jobs"),
])
def test_malformed_cloud_configs_fail_with_clear_messages(change: Any, message: str) -> None:
    platform = cloud_platform()
    change(platform)
    assert config_errors(platform) == [message]


def test_storage_region_follows_the_aws_region() -> None:
    assert load_platform(cloud_platform()).storage.region == "eu-west-1"
    platform = cloud_platform()
    platform["aws"]["region"] = "us-west-2"
    assert load_platform(platform).storage.region == "us-west-2"


def test_cloud_refuses_lab_default_secrets():
    """On aws no lab default may reach Secrets Manager: unset secrets stop the run with the fix."""
    import pulumi

    from tests.support.harness import RecordingMocks

    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_program("cloud", cloud_platform(), extra_config={}, mocks=mocks)
    message = str(info.value)
    assert "lakehouse:polarisRootSecret: run `pulumi config set --secret lakehouse:polarisRootSecret <value>" in message
    assert "lakehouse:lakekeeperEncryptionKey" in message
    assert not [r for r in mocks.resources if not r.type.startswith("pulumi:")]


def test_cloud_credentials_output_has_no_database_password(cloud):
    creds = cloud.outputs["credentials"]
    assert creds["secret"] is True
    assert "postgres_password" not in creds["value"]
    assert creds["value"]["polaris_root_secret"] == "test-polaris-root-secret"


# -- MSK Connect: the config provider, secret references, reloads (issue #13, item 13) --------------

# Kafka's ConfigTransformer.DEFAULT_PATTERN: ${provider:[path:]key}
KAFKA_REFERENCE = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")


def test_msk_connect_worker_names_a_provider_that_every_plugin_carries(streaming: ProgramRun) -> None:
    workers = the(streaming, "aws:mskconnect/workerConfiguration:WorkerConfiguration").inputs
    props = dict(line.split("=", 1) for line in workers["propertiesFileContent"].splitlines() if line)
    assert props["config.providers"] == "secretsmanager"
    assert props["config.providers.secretsmanager.class"] == kafka_connect_artifact.PROVIDER_CLASS
    source = Path(kafka_connect_artifact.PROVIDER_SOURCE).read_text()
    assert f"package {kafka_connect_artifact.PROVIDER_CLASS.rsplit('.', 1)[0]};" in source
    assert f"class {kafka_connect_artifact.PROVIDER_CLASS.rsplit('.', 1)[1]} implements ConfigProvider" in source
    for kind, plugin_dir in (("debezium-postgres", "debezium-connector-postgres"),
                             ("iceberg-sink", "iceberg-kafka-connect")):
        archive = streaming.named(f"lakehouse-{kind}-plugin").inputs["source"]
        assert set(archive.assets) == {plugin_dir, kafka_connect_artifact.PROVIDER_DIR}, kind
        assert archive.assets[kafka_connect_artifact.PROVIDER_DIR].path.endswith("/cloud-kafka-connect/secrets-provider")


def test_msk_connectors_reference_secrets_by_name_and_never_reload(streaming: ProgramRun) -> None:
    role = json.loads(next(r for r in streaming.of_type("aws:iam/rolePolicy:RolePolicy") if r.name == "lakehouse-connect").inputs["policy"])
    readable = next(s["Resource"] for s in role["Statement"] if s["Sid"] == "ConnectorSecrets")
    for connector in streaming.of_type("aws:mskconnect/connector:Connector"):
        config = connector.inputs["connectorConfiguration"]
        assert config["config.action.reload"] == "none", connector.name
        for key, value in config.items():
            for match in KAFKA_REFERENCE.finditer(value):
                provider, path, name = match.group(1), match.group(3), match.group(4)
                # Parsed as Kafka parses it: the path is the whole secret name, the key a JSON field.
                assert provider == "secretsmanager" and path and ":" not in path, (connector.name, key, value)
                assert name in ("password", "value")
                assert any(arn.split(":secret:", 1)[1].startswith(path + "-") for arn in readable), path
    assert "kafka-cluster:AlterTransactionalId" in json.dumps(role)  # the sink commits with transactions


def test_msk_cdc_source_is_a_one_off_task_with_the_labs_statements(streaming: ProgramRun) -> None:
    (task,) = [r for r in streaming.of_type("aws:ecs/taskDefinition:TaskDefinition")
               if r.name == "lakehouse-bookshop-cdc-source"]
    (container,) = json.loads(task.inputs["containerDefinitions"])
    script = " ".join(container["command"])
    assert "pg_create_logical_replication_slot('bookshop_debezium', 'pgoutput')" in script
    assert "CREATE PUBLICATION bookshop_cdc FOR TABLE public.orders" in script
    assert "bookshop_cdc WITH LOGIN" not in script  # Debezium logs in as RDS's master user on aws
    assert [s["name"] for s in container["secrets"]] == ["PGPASSWORD"]
    assert streaming.outputs["streams_jobs"]["bookshop-cdc-source"]["command"].startswith("aws ecs run-task")


def test_secret_names_come_from_arns() -> None:
    from infra.services.kafka_connect.aws import secret_name_of

    assert secret_name_of("arn:aws:secretsmanager:eu-west-1:1:secret:rds!db-1a2b-AbCdEf") == "rds!db-1a2b"
    assert secret_name_of("arn:aws:secretsmanager:eu-west-1:1:secret:lakehouse-polaris-root-secret-x1Y2z3") == \
        "lakehouse-polaris-root-secret"


def test_flink_on_msf_reads_msk_with_iam_when_kafka_is_msk(streaming: ProgramRun) -> None:
    import json

    from infra.config import load_platform
    from infra.services import ServiceContext
    from infra.services.resolver import cloud_recipes

    run = streaming
    [app] = run.of_type("aws:kinesisanalyticsv2/application:Application")
    [group] = app.inputs["applicationConfiguration"]["environmentProperties"]["propertyGroups"]
    props = group["propertyMap"]
    assert props["source"] == "kafka" and props["kafka-topic"] == "orders"
    assert props["kafka-bootstrap"] == "b-1.lakehouse-kafka.kafka.eu-west-1.amazonaws.com:9098"
    assert props["kafka.sasl.mechanism"] == "AWS_MSK_IAM" and props["kafka.security.protocol"] == "SASL_SSL"
    [policy] = [r for r in run.of_type("aws:iam/rolePolicy:RolePolicy") if r.name == "lakehouse-flink-application"]
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    # Only its own topic and consumer group (MSK ARNs: .../cluster/<name>/<uuid> -> .../topic/<name>/<uuid>/<topic>).
    assert statements["KafkaTopic"]["Resource"].endswith("/orders")
    assert statements["KafkaGroup"]["Resource"].endswith("/lakehouse-flink")
    spec = load_platform(with_changes(kafka_msk=True))
    assert cloud_recipes(spec)["flink-jobmanager"].key(ServiceContext(spec, "flink-jobmanager")).endswith(":kafka")
