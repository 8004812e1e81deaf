"""The alarms on aws (lakehouse_platform/components/aws/alarms.py) under Pulumi mocks: the catalogs' health reaches the alarm topic."""

from __future__ import annotations

from tests.support.aws_graph import the
from tests.support.harness import ProgramRun


def test_alarms_on_catalog_health_reach_the_topic(cloud: ProgramRun, streaming: ProgramRun) -> None:
    topic = "arn:aws:sns:eu-west-1:123456789012:lakehouse-alarms"
    alarms = {r.name: r.inputs for r in cloud.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")}
    for catalog in ("polaris",):  # Lakekeeper: refused (ADR 0013)
        unhealthy = alarms[f"lakehouse-{catalog}-unhealthy"]
        assert unhealthy["metricName"] == "UnHealthyHostCount"
        assert unhealthy["dimensions"]["TargetGroup"] == f"targetgroup/lakehouse-{catalog}/abc"
        assert alarms[f"lakehouse-{catalog}-5xx"]["metricName"] == "HTTPCode_Target_5XX_Count"
    for alarm in alarms.values():
        assert alarm["alarmActions"] == [topic]
    assert not cloud.of_type("aws:sns/topicSubscription:TopicSubscription")
    subscription = the(streaming, "aws:sns/topicSubscription:TopicSubscription").inputs
    assert (subscription["protocol"], subscription["endpoint"]) == ("email", "oncall@example.com")
