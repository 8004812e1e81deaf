"""The aws target: the same seven layers on an AWS account, with pulumi-aws.

One module per layer builds that layer's resources (governance.py, storage.py, ...); ``AwsTarget.build``
calls them in dependency order and hands each one the typed state of what it stands on:

    governance -> log groups (observability) -> storage -> catalog -> compute -> orchestration
               -> alarms (observability) -> recovery

The log groups come right after governance because every writer (ECS tasks, RDS, EMR, MSK) must
find its KMS-encrypted group already there; their names derive from the spec, so nothing waits
for a later layer. Conventions every module follows:
- every resource has ``parent=<its layer component>`` and the explicit provider (``ctx.opts``);
- every taggable resource carries its layer's tags (``ctx.tags``); the provider adds the platform
  and stack as default tags, and takes every ``aws:`` key of the stack (``provider_config``);
- every IAM role, policy and KMS key is a child of the governance layer, whichever layer needs it
  (``ctx.governance_opts``): one place answers "who may do what".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from infra.artifacts.resolver import StackArtifacts
from infra.layers import LayerComponent
from infra.spec import Layer, PlatformSpec
from infra.targets import Built
from infra.targets.aws.common import layer_tags, tag_value
from infra.targets.aws.provider_config import provider_args


@dataclass(frozen=True)
class AwsContext:
    """What every aws module uses: the spec, the secrets, the explicit provider and the layer components."""

    spec: PlatformSpec
    secrets: Mapping[str, pulumi.Output[str]]
    provider: aws.Provider
    layers: Mapping[Layer, LayerComponent]
    #: ``${platform:name}`` placeholders of ECS plans -> the resource outputs they stand for
    #: (``services.base.VENDING_ROLE_ARN``, ``KMS_KEY_ARN``); governance fills it.
    platform_values: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    #: What the stack uploads (MSK Connect's plugins, the Flink application's jar), looked up in the cache.
    artifacts: StackArtifacts = field(default_factory=StackArtifacts)

    def opts(self, layer: Layer, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options of a resource of one layer: its layer component as parent and the explicit provider."""
        return pulumi.ResourceOptions(parent=self.layers[layer], provider=self.provider, **kwargs)

    def governance_opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options of an IAM role, policy or key: always a child of the governance layer."""
        return self.opts(Layer.GOVERNANCE, **kwargs)

    def invoke_opts(self) -> pulumi.InvokeOutputOptions:
        return pulumi.InvokeOutputOptions(provider=self.provider)

    def tags(self, layer: Layer, service: str | None = None, **extra: str) -> dict[str, str]:
        """Tags of a resource of ``layer``: lakehouse.layer, lakehouse.owner (and service, when given)."""
        return layer_tags(self.spec, layer, service, **extra)


class AwsTarget:
    """Builds the platform on AWS: S3, RDS PostgreSQL, ECS Fargate, IAM, KMS, CloudWatch, AWS Backup."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]],
                 artifacts: StackArtifacts | None = None):
        self.spec = spec
        self.secrets = secrets
        self.artifacts = artifacts or StackArtifacts()  # what it uploads (MSK Connect's plugins), looked up
        # Every aws: key of the stack (profile, assumeRoles, endpoints, ...), for the explicit provider; read
        # here, before any resource, so a key the provider would not take stops the run with nothing registered.
        self.provider_args = provider_args(spec.aws.region, {"lakehouse.platform": tag_value(spec.name),
                                                             "lakehouse.stack": tag_value(pulumi.get_stack())})

    def build(self, layers: Mapping[Layer, LayerComponent]) -> Built:
        from infra.targets.aws import catalog, compute, governance, observability, orchestration, recovery, storage

        spec = self.spec
        provider = aws.Provider(f"{spec.name}-aws", **self.provider_args,
                                opts=pulumi.ResourceOptions(parent=layers[Layer.GOVERNANCE]))
        ctx = AwsContext(spec, self.secrets, provider, layers, artifacts=self.artifacts)
        gov = governance.build(ctx)
        logs = observability.log_groups(ctx, gov)
        store = storage.build(ctx, gov)
        cat = catalog.build(ctx, gov, logs)
        comp = compute.build(ctx, gov, logs, cat)
        orch = orchestration.build(ctx, gov, logs, comp)
        alarms = observability.alarms(ctx, gov, logs, cat, comp, orch)
        rec = recovery.build(ctx, gov, store, cat)

        built = Built()
        for layer, state in ((Layer.GOVERNANCE, gov), (Layer.STORAGE, store), (Layer.CATALOG, cat),
                             (Layer.COMPUTE, comp), (Layer.ORCHESTRATION, orch), (Layer.OBSERVABILITY, alarms),
                             (Layer.RECOVERY, rec)):
            built.layer(layer).update(state.layer_outputs())
            # One Output per key: nested Outputs (lists of subnet ids, per-job specs) resolve as a whole.
            built.outputs.update({k: pulumi.Output.from_input(v) for k, v in state.stack_outputs().items()})
        built.layer(Layer.OBSERVABILITY)["log_groups"] = logs.names
        return built
