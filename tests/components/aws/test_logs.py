"""The aws platform's logs (lakehouse_platform/components/aws/logs.py) under Pulumi mocks: every source writes to an encrypted group
made before it."""

from __future__ import annotations

from tests.support.aws_graph import containers, the
from tests.support.harness import ProgramRun


def test_every_log_source_writes_to_an_encrypted_group_that_exists_first(cloud: ProgramRun) -> None:
    groups = {g.inputs["name"] for g in cloud.of_type("aws:cloudwatch/logGroup:LogGroup")}
    for task, container in containers(cloud):
        assert container["logConfiguration"]["options"]["awslogs-group"] in groups, task
    database = the(cloud, "aws:rds/instance:Instance").inputs
    for export in database["enabledCloudwatchLogsExports"]:
        assert f"/aws/rds/instance/{database['identifier']}/{export}" in groups
    spark = the(cloud, "aws:emrserverless/application:Application").inputs
    assert spark["monitoringConfiguration"]["cloudwatchLoggingConfiguration"]["logGroupName"] in groups
    # Log groups are registered before the resources that write to them (forward dependency resolved).
    order = [r.type for r in cloud.resources]
    last_group = max(i for i, t in enumerate(order) if t == "aws:cloudwatch/logGroup:LogGroup")
    for token in ("aws:ecs/service:Service", "aws:rds/instance:Instance", "aws:emrserverless/application:Application"):
        assert min(i for i, t in enumerate(order) if t == token) > last_group, token
