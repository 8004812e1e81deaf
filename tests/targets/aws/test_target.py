"""The aws target as a whole (lakehouse_platform/targets/aws/target.py) under Pulumi mocks: the stack's outputs, and the run that
stops before any resource when a secret is left at its lab default."""

from __future__ import annotations

import pytest

from tests.support.harness import ProgramRun, run_program
from tests.support.stacks import cloud_platform


def test_stack_outputs(cloud: ProgramRun) -> None:
    outputs = cloud.outputs
    assert outputs["target"] == "aws"
    assert outputs["catalog_urls"] == {"polaris": "http://polaris.lakehouse.internal:8181/api/catalog"}
    assert outputs["rds_endpoint"] == "lakehouse-catalog-db.abc123.eu-west-1.rds.amazonaws.com:5432"
    assert outputs["replica_bucket"] == "lakehouse-warehouse-prod-replica"
    assert outputs["service_namespace"] == "lakehouse.internal"
    assert outputs["profiles"]["host"]["pyiceberg"]["uri"] == "http://polaris.lakehouse.internal:8181/api/catalog"
    assert "s3.endpoint" not in outputs["profiles"]["host"]["pyiceberg"]
    dns = {r.inputs["name"] for r in cloud.of_type("aws:servicediscovery/service:Service")}
    assert dns == {"postgres", "polaris", "trino"}


def test_cloud_refuses_lab_default_secrets():
    """On aws no lab default may reach Secrets Manager: unset secrets stop the run with the fix."""
    import pulumi

    from tests.support.harness import RecordingMocks

    mocks = RecordingMocks()
    with pytest.raises(pulumi.RunError) as info:
        run_program("cloud", cloud_platform(), extra_config={}, mocks=mocks)
    message = str(info.value)
    assert "lakehouse:polarisRootSecret: run `pulumi config set --secret lakehouse:polarisRootSecret <value>" in message
    assert "lakehouse:polarisClientSecretReader" in message  # each identity's own Polaris client secret too
    assert "lakehouse:lakekeeperEncryptionKey" not in message  # Lakekeeper is refused (ADR 0013): none of its
    assert not [r for r in mocks.resources if not r.type.startswith("pulumi:")]


@pytest.mark.parametrize("changes", [{}, {"kafka_msk": True}, {"spark_emr_serverless": False}])
def test_the_runbooks_secrets_are_exactly_the_ones_the_program_refuses_to_run_without(changes):
    """docs/targets/cloud.md's step 5 is generated from ``required_on_aws``; the program stops on the same list."""
    import re

    import pulumi

    from lakehouse_platform.config import load_platform
    from lakehouse_platform.reference import secret_commands
    from lakehouse_platform.services.secrets import required_on_aws
    from tests.support.harness import CLOUD_SECRETS
    from tests.support.stacks import with_changes

    platform = with_changes(**changes)
    required = [item.key for item in required_on_aws(load_platform(platform))]
    with pytest.raises(pulumi.RunError) as info:
        run_program("cloud", platform, extra_config={})
    assert re.findall(r"  - lakehouse:(\w+): run `pulumi config set --secret", str(info.value)) == required
    assert {f"lakehouse:{key}" for key in required} == set(CLOUD_SECRETS)  # what the mocks' runs set
    lines = secret_commands(load_platform(platform), "prod")
    assert lines[0] == ('pulumi config set --secret lakehouse:polarisRootSecret "$(openssl rand -hex 32)" '
                        "--stack prod   # polaris")
    assert [line.split()[4].removeprefix("lakehouse:") for line in lines] == required
    # Each one set, nothing is missing any more.
    without_one = {k: v for k, v in CLOUD_SECRETS.items() if k != "lakehouse:trinoPasswordReader"}
    with pytest.raises(pulumi.RunError, match=r"secrets required on the aws target are not set[^-]*- "
                                              r"lakehouse:trinoPasswordReader: run"):
        run_program("cloud", platform, extra_config=without_one)


def test_cloud_credentials_output_has_no_database_password_nor_polaris_root(cloud):
    creds = cloud.outputs["credentials"]
    assert creds["secret"] is True
    assert "postgres_password" not in creds["value"]
    assert "test-polaris-root-secret" not in str(creds["value"])  # root is the catalog job's alone
    reader = creds["value"]["identities"]["reader"]
    assert (reader["polaris_client_id"], reader["polaris_client_secret"]) == ("reader", "test-polaris-client-secret-reader")
