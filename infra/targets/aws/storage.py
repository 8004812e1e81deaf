"""Storage on AWS: the warehouse bucket, and what may delete from it.

Versioned, SSE-KMS with the platform's key (bucket key on), every public access blocked, object
ownership enforced (no ACLs), TLS-only. The lifecycle aborts stale multipart uploads and expires
*noncurrent* versions only: nothing ever expires a current object under a warehouse prefix —
deleting table files is Iceberg's own maintenance (expire_snapshots, remove_orphan_files).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from infra.spec import Layer
from infra.targets.aws.common import policy_document

if TYPE_CHECKING:
    from infra.targets.aws import AwsContext
    from infra.targets.aws.governance import GovernanceState

LAYER = Layer.STORAGE


@dataclass
class SecureBucket:
    bucket: aws.s3.Bucket
    versioning: aws.s3.BucketVersioning
    name: str


@dataclass
class StorageState:
    warehouse: SecureBucket
    warehouse_prefixes: list[str]

    def layer_outputs(self) -> dict[str, Any]:
        return {"bucket": self.warehouse.bucket.bucket, "bucket_arn": self.warehouse.bucket.arn,
                "warehouse_prefixes": self.warehouse_prefixes}

    def stack_outputs(self) -> dict[str, Any]:
        return {"bucket": self.warehouse.bucket.bucket, "bucket_arn": self.warehouse.bucket.arn}


def secure_bucket(
    ctx: AwsContext,
    layer: Layer,
    logical: str,
    bucket_name: str,
    key: aws.kms.Key,
    *,
    region: str | None = None,
    noncurrent_days: int,
    abort_multipart_days: int,
) -> SecureBucket:
    """A bucket every layer may rely on: versioned, KMS-encrypted, private, owner-enforced, TLS-only."""
    spec = ctx.spec
    where: dict[str, Any] = {} if region is None or region == spec.aws.region else {"region": region}
    opts = ctx.opts(layer)
    bucket = aws.s3.Bucket(logical, bucket=bucket_name, force_destroy=False, tags=ctx.tags(layer),
                           opts=opts, **where)
    versioning = aws.s3.BucketVersioning(
        logical, bucket=bucket.id, versioning_configuration={"status": "Enabled"}, opts=opts, **where,
    )
    aws.s3.BucketServerSideEncryptionConfiguration(
        logical, bucket=bucket.id,
        rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms",
                                                             "kms_master_key_id": key.arn},
                "bucket_key_enabled": True}],
        opts=opts, **where,
    )
    block = aws.s3.BucketPublicAccessBlock(
        logical, bucket=bucket.id, block_public_acls=True, block_public_policy=True, ignore_public_acls=True,
        restrict_public_buckets=True, opts=opts, **where,
    )
    aws.s3.BucketOwnershipControls(
        logical, bucket=bucket.id, rule={"object_ownership": "BucketOwnerEnforced"}, opts=opts, **where,
    )
    aws.s3.BucketPolicy(
        logical, bucket=bucket.id,
        policy=policy_document({
            "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Resource": [bucket.arn, pulumi.Output.concat(bucket.arn, "/*")],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }),
        opts=ctx.opts(layer, depends_on=[block]), **where,
    )
    aws.s3.BucketLifecycleConfiguration(
        logical, bucket=bucket.id,
        rules=[
            {"id": "abort-incomplete-multipart-uploads", "status": "Enabled", "filter": {"prefix": ""},
             "abort_incomplete_multipart_upload": {"days_after_initiation": abort_multipart_days}},
            # Noncurrent versions only: a current object is deleted by Iceberg maintenance, never by a rule.
            {"id": "expire-noncurrent-versions", "status": "Enabled", "filter": {"prefix": ""},
             "noncurrent_version_expiration": {"noncurrent_days": noncurrent_days}},
        ],
        opts=ctx.opts(layer, depends_on=[versioning]), **where,
    )
    return SecureBucket(bucket, versioning, bucket_name)


def build(ctx: AwsContext, gov: GovernanceState) -> StorageState:
    spec = ctx.spec
    warehouse = secure_bucket(
        ctx, LAYER, f"{spec.name}-warehouse", spec.storage.bucket, gov.key,
        noncurrent_days=spec.storage.noncurrent_version_expiration_days,
        abort_multipart_days=spec.storage.abort_incomplete_multipart_days,
    )
    return StorageState(warehouse, list(spec.storage.warehouse_prefixes))
