"""Alarms on aws: everything that should wake someone, to one KMS-encrypted SNS topic (observability).

The topic comes first in the observability layer (Amazon Managed Prometheus's alert manager publishes to it
too); then every built part that watches something adds its alarms (``watch``): a catalog with an unhealthy
or no healthy task and its 5xx (the catalog promises only success or a retried 409), the catalogs' load
balancer's own 5xx, the catalog database short of CPU or storage, the Trino coordinator not running,
maintenance invocations that failed into the dead-letter queue, the metrics exporter not running.
"""

from __future__ import annotations

from typing import Any, Protocol

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.model import Layer

LAYER = Layer.OBSERVABILITY


class Alarm(Protocol):
    """Adds one alarm: ``alarm(key, description, **MetricAlarm arguments)``."""

    def __call__(self, key_name: str, description: str, **kwargs: Any) -> None: ...


class Watcher(Protocol):
    """A part that has something to watch."""

    def watch(self, alarm: Alarm) -> None: ...


class Alarms:
    """The platform's topic and the alarms that publish to it."""

    def __init__(self, ctx: AwsContext, key_arn: pulumi.Input[str]) -> None:
        spec = ctx.spec
        self.ctx = ctx
        self.topic = aws.sns.Topic(f"{spec.name}-alarms", display_name=f"{spec.name} platform alarms",
                                   kms_master_key_id=key_arn, tags=ctx.tags(LAYER), opts=ctx.opts(LAYER))
        self.alarms: dict[str, aws.cloudwatch.MetricAlarm] = {}
        if spec.observability.alarm_email:
            aws.sns.TopicSubscription(f"{spec.name}-alarms-email", topic=self.topic.arn, protocol="email",
                                      endpoint=spec.observability.alarm_email, opts=ctx.opts(LAYER))

    def __call__(self, key_name: str, description: str, **kwargs: Any) -> None:
        spec = self.ctx.spec
        self.alarms[key_name] = aws.cloudwatch.MetricAlarm(
            f"{spec.name}-{key_name}", alarm_description=description, alarm_actions=[self.topic.arn],
            ok_actions=[self.topic.arn], tags=self.ctx.tags(LAYER, **{"lakehouse.watches": key_name}),
            opts=self.ctx.opts(LAYER), **kwargs,
        )

    def watch(self, watchers: list[Any]) -> None:
        """Every watcher's alarms, in the order given."""
        for watcher in watchers:
            if hasattr(watcher, "watch"):
                watcher.watch(self)

    def layer_outputs(self) -> dict[str, Any]:
        return {"alarm_topic": self.topic.arn, "alarms": sorted(self.alarms)}

    def stack_outputs(self) -> dict[str, Any]:
        return {"alarm_topic_arn": self.topic.arn}
