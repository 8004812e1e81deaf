"""Prometheus on aws: Amazon Managed Service for Prometheus holds the table and service signals (observability).

A workspace (KMS-encrypted) with the same alert rules every target evaluates
(``lakehouse_platform.services.prometheus.alerts``, one
rule groups namespace), its alert manager publishing to the platform's alarm topic, which it may publish to.
The exporter's task carries a Prometheus agent (this service's pinned image, ``--agent``) that remote-writes
into the workspace (the exporter's aws part).
"""

from __future__ import annotations

from typing import Any

import pulumi_aws as aws
import yaml

from lakehouse_platform.components.aws.common import physical_name, policy_document
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.aws_parts import Foundation, PartComponent
from lakehouse_platform.services.prometheus.alerts import rules_yaml
from lakehouse_platform.services.prometheus.config import NAME
from lakehouse_platform.services.registry import registry

LAYER = Layer.OBSERVABILITY


def alertmanager_definition(topic_arn: str, region: str) -> str:
    """The workspace's alert manager: every alert to the platform's SNS topic (the same one alarms use)."""
    config = {
        "route": {"receiver": "platform-topic", "group_by": ["alertname", "namespace", "table", "service"],
                  "group_wait": "30s", "repeat_interval": "4h"},
        "receivers": [{"name": "platform-topic",
                       "sns_configs": [{"topic_arn": topic_arn, "sigv4": {"region": region},
                                        "subject": "[{{ .Status }}] {{ .CommonLabels.alertname }}"}]}],
    }
    return yaml.safe_dump({"alertmanager_config": yaml.safe_dump(config, sort_keys=False)}, sort_keys=False)


def enabled(spec: PlatformSpec) -> bool:
    """The workspace holds what the platform's metrics report: it exists where a service whose metrics it keeps runs
    (an exporter's, ``ServiceDefinition.metrics``, scraped)."""
    enabled = spec.enabled_services()
    return any(d.metrics is not None and d.metrics.scraped and d.name in enabled and d.aws.task is not None
               for d in registry())


class ManagedPrometheus(PartComponent):
    """The workspace, its rules and alert manager, and the topic policy that lets them (and alarms) publish."""

    def __init__(self, foundation: Foundation) -> None:
        ctx, spec, gov = foundation.ctx, foundation.spec, foundation.gov
        super().__init__("platform:aws:ManagedPrometheus", f"{spec.name}-{NAME}", ctx, LAYER)
        topic = foundation.alarms.topic
        opts = self.child_opts()
        region = spec.aws.region
        self.workspace = aws.amp.Workspace(f"{spec.name}-signals", alias=physical_name(spec, "signals", limit=100),
                                           kms_key_arn=gov.key.arn, tags=ctx.tags(LAYER), opts=opts)
        aws.amp.RuleGroupNamespace(f"{spec.name}-alert-rules", name="lakehouse", workspace_id=self.workspace.id,
                                   data=rules_yaml(spec), tags=ctx.tags(LAYER), opts=opts)
        aws.amp.AlertManagerDefinition(f"{spec.name}-alertmanager", workspace_id=self.workspace.id,
                                       definition=topic.arn.apply(lambda arn: alertmanager_definition(arn, region)),
                                       opts=opts)
        aws.sns.TopicPolicy(f"{spec.name}-alarms-publishers", arn=topic.arn, policy=policy_document(
            {"Sid": "CloudWatchAlarms", "Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"},
             "Action": "sns:Publish", "Resource": topic.arn,
             "Condition": {"StringEquals": {"aws:SourceAccount": gov.account_id}}},
            {"Sid": "ManagedPrometheusAlertManager", "Effect": "Allow", "Principal": {"Service": "aps.amazonaws.com"},
             "Action": ["sns:Publish", "sns:GetTopicAttributes"], "Resource": topic.arn,
             "Condition": {"StringEquals": {"aws:SourceAccount": gov.account_id},
                           "ArnEquals": {"aws:SourceArn": self.workspace.arn}}},
        ), opts=opts)
        self.register_outputs({"workspace": self.workspace.arn})

    def layer_outputs(self) -> dict[str, Any]:
        return {"prometheus_workspace": self.workspace.arn, "prometheus_endpoint": self.workspace.prometheus_endpoint}

    def stack_outputs(self) -> dict[str, Any]:
        # Query with SigV4 (service aps): <endpoint>api/v1/query, .../api/v1/alerts
        return {"prometheus_endpoint": self.workspace.prometheus_endpoint}


def build(foundation: Foundation) -> ManagedPrometheus:
    return ManagedPrometheus(foundation)
