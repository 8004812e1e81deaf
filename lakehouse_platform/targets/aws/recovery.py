"""Recovery on AWS: catalog backups and a replica of the warehouse.

- an AWS Backup vault (encrypted with the platform's key) and a plan that backs up the catalog
  database daily with continuous backup (point-in-time restore), keeping recovery points at least
  ``recovery.backup_retention_days`` — on top of RDS's own automated backups of the same length;
- when ``storage.replica_bucket``: a replica bucket (versioned, encrypted, blocked, TLS-only, in
  ``aws.replica_region`` or the platform's region) and replication of every object, delete markers
  included, so the replica stays metadata-consistent with the warehouse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws import iam
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.components.aws.storage import SecureBucket, secure_bucket
from lakehouse_platform.model import Layer

LAYER = Layer.RECOVERY


@dataclass
class RecoveryState:
    vault: aws.backup.Vault
    retention_days: int
    plan: aws.backup.Plan | None = None
    replica: SecureBucket | None = None

    def layer_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backup_vault": self.vault.name, "backup_retention_days": self.retention_days}
        if self.plan is not None:
            out["backup_plan"] = self.plan.id
        if self.replica is not None:
            out["replica_bucket"] = self.replica.bucket.bucket
        return out

    def stack_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backup_vault": self.vault.name}
        if self.replica is not None:
            out["replica_bucket"] = self.replica.bucket.bucket
        return out


def build(ctx: AwsContext, gov: iam.GovernanceState, warehouse: SecureBucket,
          database: aws.rds.Instance | None) -> RecoveryState:
    """The vault, the database's backup plan (when the stack has the catalog database), the replica."""
    spec = ctx.spec
    opts = ctx.opts(LAYER)
    tags = ctx.tags(LAYER)
    retention = spec.recovery.backup_retention_days

    vault = aws.backup.Vault(f"{spec.name}-catalog-backups", name=f"{spec.name}-{pulumi.get_stack()}-catalog",
                             kms_key_arn=gov.key.arn, tags=tags, opts=opts)
    state = RecoveryState(vault, retention)

    if database is not None:
        plan = aws.backup.Plan(
            f"{spec.name}-catalog-backups",
            name=f"{spec.name}-{pulumi.get_stack()}-catalog",
            rules=[{
                "rule_name": "catalog-database-daily",
                "target_vault_name": vault.name,
                "schedule": "cron(0 3 * * ? *)",
                "schedule_expression_timezone": "UTC",
                "start_window": 60,
                "completion_window": 240,
                "enable_continuous_backup": True,  # point-in-time restore within the retention
                "lifecycle": {"delete_after": retention},
                "recovery_point_tags": tags,
            }],
            tags=tags,
            opts=opts,
        )
        role = iam.service_role(
            ctx, gov, "backup", "backup.amazonaws.com", "AWS Backup: backs up and restores the catalog database",
            [], managed=["service-role/AWSBackupServiceRolePolicyForBackup",
                         "service-role/AWSBackupServiceRolePolicyForRestores"],
            layer=LAYER,
        )
        aws.backup.Selection(f"{spec.name}-catalog-database", name=f"{spec.name}-catalog-database",
                             plan_id=plan.id, iam_role_arn=role.arn, resources=[database.arn], opts=opts)
        state.plan = plan

    if spec.storage.replica_bucket:
        state.replica = _replica(ctx, gov, warehouse)
    return state


def _replica(ctx: AwsContext, gov: iam.GovernanceState, source: SecureBucket) -> SecureBucket:
    spec = ctx.spec
    region = spec.aws.replica_region or spec.aws.region
    key = iam.replica_key(ctx, gov, region)
    replica = secure_bucket(ctx, LAYER, f"{spec.name}-warehouse-replica", f"{spec.storage.bucket}-replica", key.arn,
                            region=region)
    role = iam.service_role(
        ctx, gov, "replication", "s3.amazonaws.com", "S3 replication of the warehouse into its replica",
        [
            {"Sid": "ReadSourceConfiguration", "Effect": "Allow",
             "Action": ["s3:GetReplicationConfiguration", "s3:ListBucket"], "Resource": source.bucket.arn},
            {"Sid": "ReadSourceVersions", "Effect": "Allow",
             "Action": ["s3:GetObjectVersionForReplication", "s3:GetObjectVersionAcl", "s3:GetObjectVersionTagging"],
             "Resource": pulumi.Output.concat(source.bucket.arn, "/*")},
            {"Sid": "WriteReplica", "Effect": "Allow",
             "Action": ["s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags"],
             "Resource": pulumi.Output.concat(replica.bucket.arn, "/*")},
            {"Sid": "DecryptSource", "Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": gov.key.arn},
            {"Sid": "EncryptReplica", "Effect": "Allow", "Action": ["kms:Encrypt", "kms:GenerateDataKey"],
             "Resource": key.arn},
        ],
        layer=LAYER,
    )
    aws.s3.BucketReplicationConfig(
        f"{spec.name}-warehouse-replication",
        bucket=source.bucket.id,
        role=role.arn,
        rules=[{
            "id": "replicate-warehouse",
            "status": "Enabled",
            "priority": 1,
            "filter": {"prefix": ""},
            "delete_marker_replication": {"status": "Enabled"},
            "source_selection_criteria": {"sse_kms_encrypted_objects": {"status": "Enabled"}},
            "destination": {
                "bucket": replica.bucket.arn,
                "storage_class": "STANDARD",
                "encryption_configuration": {"replica_kms_key_id": key.arn},
            },
        }],
        opts=ctx.opts(LAYER, depends_on=[source.versioning, replica.versioning]),
    )
    return replica
