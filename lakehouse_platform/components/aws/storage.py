"""Storage on aws: the warehouse bucket, the bucket of uploaded code, and the component every bucket is made with.

``SecureBucket`` is versioned, SSE-KMS with the platform's key (bucket key on), every public access blocked,
object ownership enforced (no ACLs), TLS-only. Its lifecycle aborts stale multipart uploads and expires
*noncurrent* versions only: nothing ever expires a current object under a warehouse prefix — deleting
table files is Iceberg's own maintenance (expire_snapshots, remove_orphan_files).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.common import policy_document
from lakehouse_platform.components.aws.context import AwsComponent, AwsContext
from lakehouse_platform.model import Layer

LAYER = Layer.STORAGE


@dataclass(frozen=True)
class SecureBucketArgs:
    """What makes one bucket: its name, its key, its region, its lifecycle, its tags, and the layer it serves."""

    ctx: AwsContext
    layer: Layer  # the layer the bucket serves (its component's parent unless opts name one)
    bucket_name: str  # globally unique, 3 to 63 characters
    kms_key_arn: pulumi.Input[str]  # the KMS key every object is encrypted with
    noncurrent_version_expiration_days: int  # days a noncurrent version is kept
    abort_incomplete_multipart_days: int  # days before an unfinished upload is aborted
    region: str | None = None  # its region when it differs from the provider's (a replica)
    tags: Mapping[str, str] = field(default_factory=dict)  # the bucket's tags (its layer's)

    def __post_init__(self) -> None:
        if not 3 <= len(self.bucket_name) <= 63:
            raise ValueError(f"{self.bucket_name!r}: a bucket name has 3 to 63 characters")
        if self.noncurrent_version_expiration_days < 1 or self.abort_incomplete_multipart_days < 1:
            raise ValueError(f"{self.bucket_name}: lifecycle days must be at least 1")


class SecureBucket(AwsComponent):
    """A bucket every layer may rely on: versioned, KMS-encrypted, private, owner-enforced, TLS-only."""

    def __init__(self, name: str, args: SecureBucketArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("platform:aws:SecureBucket", name, args.ctx, args.layer, opts)
        config, ctx, logical = args, args.ctx, name
        where: dict[str, Any] = {} if config.region is None or config.region == ctx.spec.aws.region else {
            "region": config.region}
        opts = self.child_opts()
        self.name = config.bucket_name
        self.bucket = aws.s3.Bucket(logical, bucket=config.bucket_name, force_destroy=False, tags=dict(config.tags),
                                    opts=opts, **where)
        self.versioning = aws.s3.BucketVersioning(
            logical, bucket=self.bucket.id, versioning_configuration={"status": "Enabled"}, opts=opts, **where,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            logical, bucket=self.bucket.id,
            rules=[{"apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms",
                                                                 "kms_master_key_id": config.kms_key_arn},
                    "bucket_key_enabled": True}],
            opts=opts, **where,
        )
        block = aws.s3.BucketPublicAccessBlock(
            logical, bucket=self.bucket.id, block_public_acls=True, block_public_policy=True,
            ignore_public_acls=True, restrict_public_buckets=True, opts=opts, **where,
        )
        aws.s3.BucketOwnershipControls(
            logical, bucket=self.bucket.id, rule={"object_ownership": "BucketOwnerEnforced"}, opts=opts, **where,
        )
        aws.s3.BucketPolicy(
            logical, bucket=self.bucket.id,
            policy=policy_document({
                "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                "Resource": [self.bucket.arn, pulumi.Output.concat(self.bucket.arn, "/*")],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }),
            opts=self.child_opts(depends_on=[block]), **where,
        )
        aws.s3.BucketLifecycleConfiguration(
            logical, bucket=self.bucket.id,
            rules=[
                {"id": "abort-incomplete-multipart-uploads", "status": "Enabled", "filter": {"prefix": ""},
                 "abort_incomplete_multipart_upload": {
                     "days_after_initiation": config.abort_incomplete_multipart_days}},
                # Noncurrent versions only: a current object is deleted by Iceberg maintenance, never by a rule.
                {"id": "expire-noncurrent-versions", "status": "Enabled", "filter": {"prefix": ""},
                 "noncurrent_version_expiration": {"noncurrent_days": config.noncurrent_version_expiration_days}},
            ],
            opts=self.child_opts(depends_on=[self.versioning]), **where,
        )
        self.register_outputs({"bucket": self.bucket.bucket, "arn": self.bucket.arn})


def secure_bucket(ctx: AwsContext, layer: Layer, logical: str, bucket_name: str, key_arn: pulumi.Input[str], *,
                  region: str | None = None) -> SecureBucket:
    """A ``SecureBucket`` of ``layer`` with the stack's lifecycle settings and its layer's tags."""
    storage = ctx.spec.storage
    args = SecureBucketArgs(ctx=ctx, layer=layer, bucket_name=bucket_name, kms_key_arn=key_arn, region=region,
                            noncurrent_version_expiration_days=storage.noncurrent_version_expiration_days,
                            abort_incomplete_multipart_days=storage.abort_incomplete_multipart_days,
                            tags=ctx.tags(layer))
    return SecureBucket(logical, args)


def warehouse(ctx: AwsContext, key_arn: pulumi.Input[str]) -> SecureBucket:
    """The warehouse: every table's data and metadata files."""
    spec = ctx.spec
    return secure_bucket(ctx, LAYER, f"{spec.name}-warehouse", spec.storage.bucket, key_arn)


def storage_outputs(bucket: SecureBucket, prefixes: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(layer outputs, stack outputs) of the storage layer."""
    layer = {"bucket": bucket.bucket.bucket, "bucket_arn": bucket.bucket.arn, "warehouse_prefixes": prefixes}
    return layer, {"bucket": bucket.bucket.bucket, "bucket_arn": bucket.bucket.arn}


def code_bucket_name(bucket: str) -> str:
    """``<warehouse>-artifacts``, shortened with a digest when it would pass S3's 63 characters."""
    name = f"{bucket}-artifacts"
    if len(name) <= 63:
        return name
    return f"{bucket[:50].rstrip('-.')}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
