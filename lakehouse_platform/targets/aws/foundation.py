"""What every service's aws part stands on: governance, the log groups, the warehouse, the layers' clusters.

The aws target builds the shared pieces first, then hands this to each part (``AwsPart.build``) in layer
order. A part records itself here, so a later part finds an earlier one by the capability its service provides
(``provider``): MSK Connect and the Flink application find the broker (MSK), the backups find the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi
import pulumi_aws as aws

from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.capabilities import Capability
from lakehouse_platform.services.registry import registry
from lakehouse_platform.targets.aws import ecs
from lakehouse_platform.targets.aws.context import AwsComponent, AwsContext
from lakehouse_platform.targets.aws.governance import GovernanceState
from lakehouse_platform.targets.aws.logs import LogGroups
from lakehouse_platform.targets.aws.storage import SecureBucket, code_bucket_name, secure_bucket

Part = TypeVar("Part", bound=AwsComponent)


@dataclass
class Foundation:
    """The shared aws pieces, and the parts built so far (by service name)."""

    ctx: AwsContext
    gov: GovernanceState
    logs: LogGroups
    warehouse: SecureBucket
    #: secret placeholder name -> what an ECS ``secrets`` entry's valueFrom is: governance's secrets, and what
    #: parts add (the catalog database's RDS-managed master password).
    secret_refs: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    clusters: dict[Layer, aws.ecs.Cluster] = field(default_factory=dict)
    parts: dict[str, AwsComponent] = field(default_factory=dict)
    #: The one-off jobs of the catalog's setup, by name (``pulumi up`` runs them: ``catalogs.bootstrap``).
    catalog_jobs: dict[str, aws.ecs.TaskDefinition] = field(default_factory=dict)
    #: The catalog's setup having run: what needs the catalog (declared tables, the Flink application, the
    #: connectors) depends on these (empty where the catalog needs no job).
    catalog_ready: list[pulumi.Resource] = field(default_factory=list)
    #: The catalogs' internal load balancer and its listener (when a catalog runs as an ECS service).
    load_balancer: aws.lb.LoadBalancer | None = None
    listener: aws.lb.Listener | None = None
    #: Where every alarm and alert goes (the observability layer makes it before its parts).
    alarm_topic: aws.sns.Topic | None = None
    code: SecureBucket | None = None

    @property
    def spec(self) -> PlatformSpec:
        return self.ctx.spec

    def cluster(self, layer: Layer) -> aws.ecs.Cluster:
        """The ECS cluster of one layer, made the first time a part asks for it."""
        if layer not in self.clusters:
            self.clusters[layer] = ecs.cluster(self.ctx, layer)
        return self.clusters[layer]

    def code_bucket(self) -> SecureBucket:
        """The compute layer's private bucket of uploaded code (Debezium plugin, Flink jar), made once."""
        if self.code is None:
            spec = self.ctx.spec
            self.code = secure_bucket(self.ctx, Layer.COMPUTE, f"{spec.name}-artifacts",
                                      code_bucket_name(spec.storage.bucket), self.gov.key.arn)
        return self.code

    def provider(self, capability: Capability) -> Any | None:
        """The built part of the service that provides ``capability`` (its protocol:
        ``lakehouse_platform.services.capabilities``), if the stack has one: how a part reaches another service's
        part without naming it."""
        return next((self.parts[n] for n in registry().providers(capability) if n in self.parts), None)

    def part(self, kind: type[Part]) -> Part | None:
        """The built part of this type, if the stack has one."""
        found = [p for p in self.parts.values() if isinstance(p, kind)]
        return found[0] if found else None
