"""The aws target's storage (lakehouse_platform/components/aws/storage.py) under Pulumi mocks: every bucket hardened, lifecycles that
never expire a current object, the configured warehouse bucket. Each run evaluates the whole program with
Pulumi.cloud.yaml's ``lakehouse:platform`` object (and two variants, tests/conftest.py); only the AWS provider is mocked."""

from __future__ import annotations

import json

import pytest

from lakehouse_platform.config import load_platform
from tests.support.aws_graph import ALL_RUNS, BUCKET, buckets_of, named, resource_id
from tests.support.harness import ProgramRun
from tests.support.stacks import cloud_platform


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
