"""Every log of the aws platform in a KMS-encrypted CloudWatch log group (observability).

One group per ECS service and job, per managed engine (EMR Serverless, MSK, MSK Connect) and per RDS log
export, encrypted with the platform's key and kept ``aws.log_retention_days``. The groups are built right
after governance from the log sources every aws part declares (``AwsPart.log_sources``) and the target's
own (declared tables), and every writer waits for its group, so nothing creates an unencrypted one first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.common import log_group_name
from lakehouse_platform.components.aws.context import AwsContext
from lakehouse_platform.model import Layer

LAYER = Layer.OBSERVABILITY


@dataclass
class LogGroups:
    """Every log group of the stack, by source; built before anything that writes to one."""

    names: dict[str, str]
    groups: dict[str, aws.cloudwatch.LogGroup]

    def group(self, source: str) -> aws.cloudwatch.LogGroup:
        """The group a writer waits for; a source no part declared is an ordering bug, not a skip."""
        if source not in self.groups:
            raise KeyError(f"no log group for {source!r}: add it to its aws part's log_sources; "
                           f"declared: {', '.join(self.groups)}")
        return self.groups[source]


def build(ctx: AwsContext, key_arn: pulumi.Input[str], sources: Mapping[str, str | None]) -> LogGroups:
    """One KMS-encrypted group per source (source -> group name; None: the platform's name for it)."""
    spec = ctx.spec
    names = {source: name or log_group_name(spec, source) for source, name in sources.items()}
    groups = {
        source: aws.cloudwatch.LogGroup(
            f"{spec.name}-logs-{source}", name=name, kms_key_id=key_arn,
            retention_in_days=spec.aws.log_retention_days,
            tags=ctx.tags(LAYER, **{"lakehouse.source": source}), opts=ctx.opts(LAYER),
        )
        for source, name in names.items()
    }
    return LogGroups(names, groups)
