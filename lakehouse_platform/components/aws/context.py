"""What every piece of the aws target reads: the spec, the secrets, the explicit provider, the layer components.

Conventions every module follows:
- every resource has the explicit provider and a parent under its layer's component (``opts``, or a
  component's ``child_opts``);
- every taggable resource carries its layer's tags (``tags``); the provider adds the platform and stack
  as default tags;
- every IAM role, policy and KMS key is a child of the governance layer, whichever layer needs it
  (``governance_opts``): one place answers "who may do what".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from lakehouse_platform.artifacts.stack import StackArtifacts
from lakehouse_platform.components.aws.common import layer_tags
from lakehouse_platform.layers import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec


@dataclass(frozen=True)
class RegistryImage:
    """An image the stack builds and pushes itself: what task definitions name, and the repository it is pulled from."""

    reference: pulumi.Input[str]  # ``<repository>@sha256:...``
    repository_arn: pulumi.Input[str]


@dataclass(frozen=True)
class AwsContext:
    """The spec, the secrets, the explicit provider and the layer components."""

    spec: PlatformSpec
    secrets: Mapping[str, pulumi.Output[str]]
    provider: aws.Provider
    layers: Mapping[Layer, LayerComponent]
    #: ``${platform:name}`` placeholders of ECS plans -> the resource outputs they stand for
    #: (``lakehouse_platform.placeholders.VENDING_ROLE_ARN``, ``KMS_KEY_ARN``); governance fills it.
    platform_values: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    #: What the stack uploads (MSK Connect's plugins, the Flink application's jar), looked up in the cache.
    artifacts: StackArtifacts = field(default_factory=StackArtifacts)
    #: The spec's image name -> the image the stack pushed under it (the operations image: ``images``). Every task
    #: definition names it by digest instead, and its execution role may pull it.
    images: dict[str, RegistryImage] = field(default_factory=dict)
    #: The images the platform builds itself (the operations image): they exist only where built, so a task may run
    #: one only once the stack pushed it (``images``).
    built_images: frozenset[str] = frozenset()

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


class AwsComponent(pulumi.ComponentResource):
    """A group of aws resources under one layer: a reusable piece (a network, a bucket, a service), and what the
    services' aws halves build on it.

    Its resources are children of the component (``child_opts``) with the explicit provider. Each carries an
    alias to the layer component it was parented to before components grouped it, so a stack deployed before
    keeps every resource (no replacement from a new URN).
    """

    def __init__(self, type_token: str, name: str, ctx: AwsContext, layer: Layer,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """``opts`` as given (a parent inside the layer, another component); the layer component as the parent
        when they name none."""
        opts = pulumi.ResourceOptions.merge(pulumi.ResourceOptions(parent=ctx.layers[layer]), opts)
        super().__init__(type_token, name, None, opts)
        self.ctx = ctx
        self.layer = layer

    def child_opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options of a resource of this component: parent, provider, and the alias of its former parent."""
        return pulumi.ResourceOptions(parent=self, provider=self.ctx.provider,
                                      aliases=[pulumi.Alias(parent=self.ctx.layers[self.layer])], **kwargs)
