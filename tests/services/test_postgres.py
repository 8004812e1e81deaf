"""PostgreSQL on aws (lakehouse_platform/services/postgres/aws.py) under Pulumi mocks: RDS private, backed up, protected, TLS only."""

from __future__ import annotations

from lakehouse_platform.config import load_platform
from tests.support.aws_graph import resource_id, the
from tests.support.harness import ProgramRun
from tests.support.stacks import cloud_platform


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
