"""Storage rules: lifecycle keeps the warehouse, buckets protected, the object store persistent."""

from __future__ import annotations

from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.resources import Resource, StackContext
from tests.support.policy_support import ROOT, aws, cloud_context, graph, lab, named, violations, warehouse_bucket


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
    data = dict(pack_config.context_for_stack("cloud", ROOT))
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
