"""Deployment targets: one declaration, three places it runs."""

from __future__ import annotations

from infra.spec import PlatformSpec, Target
from infra.targets.base import DeployTarget


def make_target(spec: PlatformSpec, secrets: dict) -> DeployTarget:
    """The target a stack deploys to. Provider packages are imported only for the chosen target."""
    if spec.target is Target.DOCKER:
        from infra.targets.docker import DockerTarget

        return DockerTarget(spec, secrets)
    if spec.target is Target.AWS:
        from infra.targets.aws import AwsTarget

        return AwsTarget(spec, secrets)
    from infra.targets.native.target import NativeTarget

    return NativeTarget(spec, secrets)
