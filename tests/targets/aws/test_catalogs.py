"""The catalogs on aws (lakehouse_platform/targets/aws/catalogs.py) under Pulumi mocks: ECS services behind one internal load
balancer, their setup jobs as one-off task definitions in the order CD runs them."""

from __future__ import annotations

import re

from lakehouse_platform.config import load_platform
from lakehouse_platform.services.operations_support import OPERATIONS_IMAGE
from tests.support.aws_graph import container_of_task, containers, ecs_service, the, written_files
from tests.support.harness import ProgramRun
from tests.support.stacks import cloud_platform


def test_catalogs_run_on_fargate_behind_an_internal_load_balancer(cloud: ProgramRun) -> None:
    balancer = the(cloud, "aws:lb/loadBalancer:LoadBalancer").inputs
    assert balancer["internal"] is True
    assert balancer["loadBalancerType"] == "application"
    groups = {r.name: r.inputs for r in cloud.of_type("aws:lb/targetGroup:TargetGroup")}
    assert groups["lakehouse-polaris"]["healthCheck"]["path"] == "/q/health"
    assert groups["lakehouse-polaris"]["healthCheck"]["port"] == "8182"
    assert "lakehouse-lakekeeper" not in groups  # refused until it enforces grants (ADR 0013)
    rules = {r.name: r.inputs for r in cloud.of_type("aws:lb/listenerRule:ListenerRule")}
    assert rules["lakehouse-polaris"]["conditions"] == [{"hostHeader": {"values": ["polaris.lakehouse.internal"]}}]
    for name in ("polaris",):
        service = ecs_service(cloud, name).inputs
        assert service["launchType"] == "FARGATE"
        assert service["desiredCount"] == 2
        assert service["networkConfiguration"]["assignPublicIp"] is False
        assert service["loadBalancers"][0]["targetGroupArn"].endswith(f"lakehouse-{name}")
        assert service["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    images = {c["name"]: c["image"] for _, c in containers(cloud)}
    spec = load_platform(cloud_platform())
    for name in ("polaris", "polaris-bootstrap", "trino"):
        assert images[name] == spec.services[name].image
    # The catalog job runs in the operations image, which the stack pushes itself: named by its digest.
    assert spec.services["polaris-catalog"].image == OPERATIONS_IMAGE
    assert re.search(r"/lakehouse-cloud/operations@sha256:[0-9a-f]{64}$", images["polaris-catalog"])
    memory = {c["name"]: c["memory"] for _, c in containers(cloud)}
    assert memory["polaris"] == 1024 and memory["polaris-catalog"] == 128  # the service budgets


def test_jobs_are_one_off_task_definitions_in_order(cloud: ProgramRun) -> None:
    jobs = cloud.outputs["catalog_jobs"]
    # Each catalog's setup job (catalog, warehouse) after its server's bootstrap or migration.
    assert sorted(jobs, key=lambda j: jobs[j]["order"]) == [
        "postgres-init", "polaris-bootstrap", "polaris-catalog"]  # Lakekeeper: refused (ADR 0013)
    for job in jobs.values():
        assert job["command"].startswith(f"aws ecs run-task --cluster lakehouse-cloud-catalog "
                                         f"--task-definition {job['task_definition']}")
    services = {r.inputs.get("name") for r in cloud.of_type("aws:ecs/service:Service")}
    assert not services & set(jobs), "a job must not run as a long-lived service"


def test_catalog_setup_jobs_name_the_vending_role_and_key_and_read_secrets_from_secrets_manager(
        cloud: ProgramRun) -> None:
    """Issue #13 item 4 on aws: the setup jobs get the ARNs Polaris and Lakekeeper must name, never a secret value."""
    vending = "arn:aws:iam:eu-west-1:123456789012:lakehouse-credential-vending"
    key = "arn:aws:kms:eu-west-1:123456789012:lakehouse-key"
    catalog = container_of_task(cloud, "lakehouse-polaris-catalog")
    # The access job: the operations image's Python, as the stack pushed it (by digest).
    assert re.search(r"/lakehouse-cloud/operations@sha256:[0-9a-f]{64}$", catalog["image"])
    env = {e["name"]: e["value"] for e in catalog["environment"]}
    assert env == {"KMS_KEY_ARN": key, "POLARIS_ROOT_CLIENT_ID": "root", "VENDING_ROLE_ARN": vending}
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:lakehouse-{}-AbCdEf"
    # Root and each identity's client secret (the job sets them on their principals), from Secrets Manager.
    assert sorted(catalog["secrets"], key=lambda s: s["name"]) == [
        {"name": f"POLARIS_CLIENT_SECRET_{n.upper()}", "valueFrom": arn.format(f"polaris-client-secret-{n}")}
        for n in ("platform", "reader", "writer")] + [
        {"name": "POLARIS_ROOT_SECRET", "valueFrom": arn.format("polaris-root-secret")}]
    # Its config file names the ARNs as ${ENV:...}, which the job reads from its environment.
    assert '${ENV:VENDING_ROLE_ARN}' in written_files(catalog["command"][0])["/etc/lakehouse/polaris-access.json"]
    # The jobs run in the catalogs' group and reach the catalogs through the load balancer.
    rules = cloud.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert any(r.inputs["securityGroupId"] == "lakehouse-lb-id" and r.inputs["referencedSecurityGroupId"]
               == "lakehouse-catalogs-id" and r.inputs["fromPort"] == 8181 for r in rules)
    egress = cloud.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    assert any(r.inputs["securityGroupId"] == "lakehouse-catalogs-id" and r.inputs.get("referencedSecurityGroupId")
               == "lakehouse-lb-id" and r.inputs["fromPort"] == 8181 for r in egress)
