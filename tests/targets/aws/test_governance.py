"""Governance on aws (lakehouse_platform/targets/aws/governance.py) under Pulumi mocks: everything encrypted with the platform's key,
the credential-vending role only the catalogs may assume, the identities as IAM roles with the lab identities' rights."""

from __future__ import annotations

import json

import pytest

from tests.support.aws_graph import ALL_RUNS, buckets_of, policy, resource_id, the
from tests.support.harness import ProgramRun


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


def test_only_the_catalogs_may_assume_the_vending_role_and_it_reaches_only_the_warehouse(cloud: ProgramRun) -> None:
    vending = cloud.named("lakehouse-credential-vending").inputs
    (trust,) = json.loads(vending["assumeRolePolicy"])["Statement"]
    assert sorted(trust["Principal"]["AWS"]) == [  # Lakekeeper's task role too, once it runs (ADR 0013)
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


def test_cloud_identities_are_iam_roles_with_their_grants(cloud):
    reader = {s["Sid"]: s for s in policy(cloud, "lakehouse-identity-reader-warehouse")["Statement"]}
    writer = {s["Sid"]: s for s in policy(cloud, "lakehouse-identity-writer-warehouse")["Statement"]}
    assert reader["ReadWarehouse"]["Action"] == ["s3:GetObject", "s3:GetObjectVersion"]
    assert reader["ReadWarehouse"]["Resource"] == "arn:aws:s3:::lakehouse-warehouse-prod/*"
    assert "WriteWarehouse" not in reader
    assert {"s3:PutObject", "s3:DeleteObject"} <= set(writer["WriteWarehouse"]["Action"])
    assert "kms:GenerateDataKey" not in reader["WarehouseKey"]["Action"]
    assert "kms:GenerateDataKey" in writer["WarehouseKey"]["Action"]
    assert not [r for r in cloud.resources if r.name == "lakehouse-identity-platform"], "the platform is the deployer"
    assert set(cloud.outputs["identity_role_arns"]) == {"writer", "reader"}


def test_a_namespace_grant_is_an_iam_statement_on_its_prefix_and_a_narrowing_a_deny():
    from tests.support.harness import CLOUD_SECRETS, run_program
    from tests.support.stacks import cloud_platform

    platform = cloud_platform()
    platform["governance"] = {"namespaces": ["shop", "finance"]}
    platform["identities"] = {
        "etl": {"access_key": "etl-access-key", "actions": ["Read", "Write", "List"],
                "secret_config_key": "s3EtlSecretKey", "grants": {"shop": ["read", "write"], "finance": ["read"]}},
        "wide": {"access_key": "wide-access-key", "actions": ["Read", "Write", "List"],
                 "secret_config_key": "s3WideSecretKey", "grants": {"*": ["read", "write"], "finance": ["read"]}}}
    run = run_program("cloud", platform, extra_config={
        **CLOUD_SECRETS, **{f"lakehouse:{kind}{name}": f"{kind}-{name}" for kind in ("trinoPassword", "polarisClientSecret")
                            for name in ("Etl", "Wide")}})
    etl = {s["Sid"]: s for s in policy(run, "lakehouse-identity-etl-warehouse")["Statement"]}
    bucket = "arn:aws:s3:::lakehouse-warehouse-prod"
    assert set(etl) == {"LocateWarehouse", "ReadShop", "WriteShop", "ListShop", "ReadFinance", "ListFinance",
                        "WarehouseKey"}
    assert etl["WriteShop"]["Resource"] == [f"{bucket}/polaris/shop/*"]  # Polaris's tables: <base>/<namespace>/
    assert etl["ListFinance"]["Condition"] == {"StringLike": {"s3:prefix": ["polaris/finance/*"]}}
    wide = {s["Sid"]: s for s in policy(run, "lakehouse-identity-wide-warehouse")["Statement"]}
    assert wide["WriteWarehouse"]["Resource"] == f"{bucket}/*"
    assert wide["DenyWriteFinance"] == {"Sid": "DenyWriteFinance", "Effect": "Deny",
                                        "Action": ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                                                   "s3:ListMultipartUploadParts"],
                                        "Resource": [f"{bucket}/polaris/finance/*"]}
