"""The aws network (lakehouse_platform/components/aws/network.py) under Pulumi mocks: each hop admitted from exactly one security group."""

from __future__ import annotations

from tests.support.aws_graph import ecs_service, the
from tests.support.harness import ProgramRun


def test_catalogs_reach_the_database_only_through_their_security_group(cloud: ProgramRun) -> None:
    database = the(cloud, "aws:rds/instance:Instance").inputs
    (db_sg,) = database["vpcSecurityGroupIds"]
    catalog_sgs = {sg for name in ("polaris",)  # Lakekeeper: refused (ADR 0013)
                   for sg in ecs_service(cloud, name).inputs["networkConfiguration"]["securityGroups"]}
    assert len(catalog_sgs) == 1
    (catalog_sg,) = catalog_sgs
    assert catalog_sg != db_sg
    ingress = [r.inputs for r in cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs["securityGroupId"] == db_sg]
    assert ingress, "the database admits nobody"
    for rule in ingress:
        assert rule["referencedSecurityGroupId"] == catalog_sg
        assert rule["fromPort"] == rule["toPort"] == 5432
        assert not {"cidrIpv4", "cidrIpv6", "prefixListId"} & set(rule)
    for group in cloud.of_type("aws:ec2/securityGroup:SecurityGroup"):
        assert not group.inputs.get("ingress"), f"{group.name}: inline ingress bypasses the reviewed rules"
    # No ingress anywhere is open to a CIDR: every hop is admitted from a security group.
    for rule in cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"):
        assert "referencedSecurityGroupId" in rule.inputs and "cidrIpv4" not in rule.inputs, rule.name
    # The catalog port admits only the engines and the internal load balancer.
    engines = ecs_service(cloud, "trino").inputs["networkConfiguration"]["securityGroups"][0]
    balancer = the(cloud, "aws:lb/loadBalancer:LoadBalancer").inputs["securityGroups"][0]
    sources = {r.inputs["referencedSecurityGroupId"] for r in
               cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs["securityGroupId"] == catalog_sg and r.inputs["fromPort"] == 8181}
    assert sources == {engines, balancer}


def test_streaming_adds_only_debezium_to_the_database(streaming: ProgramRun) -> None:
    (db_sg,) = the(streaming, "aws:rds/instance:Instance").inputs["vpcSecurityGroupIds"]
    sources = {r.inputs["referencedSecurityGroupId"] for r in
               streaming.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
               if r.inputs["securityGroupId"] == db_sg}
    assert sources == {"lakehouse-catalogs-id", "lakehouse-connect-id"}


def test_the_engines_group_admits_what_trino_declares_and_nothing_names_trino_in_the_network(cloud: ProgramRun) -> None:
    """Trino's coordinator and workers reach each other on its http port: the hop Trino's package declares
    (OnAws.ingress), with the matching egress; the shared network has no table of service ports."""
    engines = ecs_service(cloud, "trino").inputs["networkConfiguration"]["securityGroups"][0]
    within = [r for r in cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
              if r.inputs["securityGroupId"] == engines and r.inputs["referencedSecurityGroupId"] == engines]
    assert [(r.inputs["fromPort"], r.inputs["description"]) for r in within] == [
        (8080, "Trino coordinator and workers; maintenance tasks")]
    out = [r for r in cloud.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
           if r.inputs["securityGroupId"] == engines and r.inputs.get("referencedSecurityGroupId") == engines]
    assert [(r.inputs["fromPort"], r.inputs["description"]) for r in out] == [(8080, "Trino coordinator and workers")]
