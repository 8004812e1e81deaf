"""Spark on aws (lakehouse_platform/services/spark/aws.py) under Pulumi mocks: EMR Serverless only when asked, table data through the
catalog with a credential from Secrets Manager."""

from __future__ import annotations

import json

from tests.support.aws_graph import named, the
from tests.support.harness import SECRET_KEY, SECRET_SIG, ProgramRun


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
    # The writer identity's own principal at Polaris, never Polaris's root.
    assert version.inputs["secretString"] == {SECRET_KEY: SECRET_SIG, "value": "writer:test-polaris-client-secret-writer"}
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
