"""The aws target: the same seven layers on an AWS account, with pulumi-aws.

One module per layer builds that layer's resources (governance.py, storage.py, ...); this module
holds what they share: the explicit provider, the tags, the option helpers, and the state one
layer hands to the next (the network and keys governance creates, the bucket storage creates, ...).

Conventions every module follows:
- every resource has ``parent=<its layer component>`` and the explicit provider (``target.opts``);
- every taggable resource carries its layer's tags (``target.tags``); the provider adds the
  platform and stack as default tags;
- every IAM role, policy and KMS key is a child of the governance layer, whichever layer needs it
  (``target.governance_opts``): one place answers "who may do what";
- a few dependencies point forward (an ECS service waits for the log group the observability layer
  creates): those go through ``target.logs_ready`` (see common.Deferred).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import pulumi
import pulumi_aws as aws

from infra.spec import Layer, PlatformSpec
from infra.targets.aws.common import Deferred, layer_tags, tag_value
from infra.targets.base import DeployTarget

if TYPE_CHECKING:
    from infra.layers.base import LayerComponent


class AwsTarget(DeployTarget):
    """Builds the platform on AWS: S3, RDS PostgreSQL, ECS Fargate, IAM, KMS, CloudWatch, AWS Backup."""

    def __init__(self, spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]]):
        super().__init__(spec, secrets)
        self.components: dict[Layer, "LayerComponent"] = {}
        self.provider: aws.Provider | None = None
        self._logs_ready: Deferred | None = None
        # State handed from layer to layer; each module sets its own (see the modules' dataclasses).
        self.governance: Any = None
        self.storage: Any = None
        self.catalog: Any = None
        self.compute: Any = None
        self.orchestration: Any = None
        self.observability: Any = None
        self.recovery: Any = None
        self._outputs: dict[str, Any] = {}

    # -- what every module uses -------------------------------------------------------------

    def opts(self, parent: pulumi.Resource, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options of a resource of one layer: its parent component and the explicit provider."""
        return pulumi.ResourceOptions(parent=parent, provider=self.provider, **kwargs)

    def governance_opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options of an IAM role, policy or key: always a child of the governance layer."""
        return self.opts(self.components[Layer.GOVERNANCE], **kwargs)

    def invoke_opts(self) -> pulumi.InvokeOutputOptions:
        return pulumi.InvokeOutputOptions(provider=self.provider)

    def tags(self, layer: Layer, service: str | None = None, **extra: str) -> dict[str, str]:
        """Tags of a resource of ``layer``: lakehouse.layer, lakehouse.owner (and service, when given)."""
        return layer_tags(self.spec, layer, service, **extra)

    @property
    def logs_ready(self) -> pulumi.Output:
        """Resolves to the log groups once the observability layer has declared them."""
        if self._logs_ready is None:
            self._logs_ready = Deferred()
        return self._logs_ready.output

    def resolve_logs(self, resources: list[pulumi.Resource]) -> None:
        if self._logs_ready is None:
            self._logs_ready = Deferred()
        self._logs_ready.resolve(resources)

    def export(self, **values: Any) -> None:
        """Record target-specific stack outputs (returned by ``stack_outputs``)."""
        self._outputs.update(values)

    # -- DeployTarget -----------------------------------------------------------------------

    def build_layer(self, component: "LayerComponent", spec: PlatformSpec) -> dict[str, Any]:
        from infra.targets.aws import (
            catalog, compute, governance, observability, orchestration, recovery, storage,
        )

        builders: dict[Layer, Callable[[AwsTarget, "LayerComponent"], dict[str, Any]]] = {
            Layer.GOVERNANCE: governance.build,
            Layer.STORAGE: storage.build,
            Layer.CATALOG: catalog.build,
            Layer.COMPUTE: compute.build,
            Layer.ORCHESTRATION: orchestration.build,
            Layer.OBSERVABILITY: observability.build,
            Layer.RECOVERY: recovery.build,
        }
        self.components[component.layer] = component
        if component.layer is not Layer.GOVERNANCE and self.governance is None:
            raise RuntimeError(
                f"aws target: the {component.layer.value} layer was built before governance; governance creates the "
                "provider, network, keys and roles every other layer stands on (see infra.layers.BUILD_ORDER)"
            )
        if self.provider is None:
            self.provider = aws.Provider(
                f"{spec.name}-aws",
                region=spec.aws.region,
                default_tags={"tags": {
                    "lakehouse.platform": tag_value(spec.name),
                    "lakehouse.stack": tag_value(pulumi.get_stack()),
                }},
                opts=pulumi.ResourceOptions(parent=component),
            )
        try:
            return builders[component.layer](self, component)
        except BaseException:
            # Never leave a resource waiting on a forward dependency that will not come.
            self.resolve_logs([])
            raise

    def stack_outputs(self) -> dict[str, Any]:
        if self._logs_ready is not None and not self._logs_ready.resolved:
            self.resolve_logs([])  # release the waiting resources before failing, so the run cannot hang
            raise RuntimeError(
                "aws target: the observability layer was never built, so the log groups the ECS services, RDS, "
                "EMR and MSK write to do not exist; keep Observability in infra.layers.BUILD_ORDER"
            )
        # One Output per key: nested Outputs (lists of subnet ids, per-job specs) resolve as a whole.
        return {key: pulumi.Output.from_input(value) for key, value in self._outputs.items()}
