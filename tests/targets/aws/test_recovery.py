"""Recovery on aws (lakehouse_platform/targets/aws/recovery.py) under Pulumi mocks: the backup plan's retention, the warehouse's
replica."""

from __future__ import annotations

from tests.support.aws_graph import BUCKET, named, resource_id, the
from tests.support.harness import ProgramRun


def test_backup_plan_keeps_at_least_the_promised_retention(cloud: ProgramRun) -> None:
    (rule,) = the(cloud, "aws:backup/plan:Plan").inputs["rules"]
    assert rule["lifecycle"]["deleteAfter"] >= 14
    assert rule["targetVaultName"] == the(cloud, "aws:backup/vault:Vault").inputs["name"]
    selection = the(cloud, "aws:backup/selection:Selection").inputs
    assert selection["resources"] == ["arn:aws:rds:eu-west-1:123456789012:lakehouse-catalog-db"]
    assert selection["planId"] == resource_id(the(cloud, "aws:backup/plan:Plan"))


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
