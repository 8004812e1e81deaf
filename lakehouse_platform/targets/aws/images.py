"""The images the cloud builds and pushes itself: the operations image, in an ECR repository of the stack's own.

The exporter and the maintenance tasks run the platform's one operations image (the package's
``runtime/image/Dockerfile`` on ``runtime/image/operations.lock``: the lab's image, from the same files). On aws the
program builds it on the deploying machine's Docker engine and pushes it into the stack's repository with the
registry's own credentials (``aws.ecr.get_authorization_token``), and every task definition that runs it names it
by the digest the push returned (``ecs.container_definition`` swaps the spec's image name for it; ``task_definition``
gives the task's execution role the right to pull it). No image key is set by hand.

The repository (ADR 0008):

- tags are immutable: a tag names one context (``<version>-<context digest>``) and can never be re-pointed;
- every push is scanned (basic scanning, ``scan_on_push``);
- encrypted with the platform's KMS key (ECR holds a grant on it; pulling needs no key rights);
- lifecycle: untagged images expire after ``UNTAGGED_DAYS`` (debris of an interrupted push: a complete push
  is always tagged), and only the newest ``KEPT_IMAGES`` images are kept. A count, never an age: a stack
  whose operations code does not change for months keeps running the one image it pushed, and a task
  definition revision the ECS circuit breaker rolls back to still finds the image it names;
- ``force_delete``: tearing the stack down removes the repository with its images (they are build outputs,
  made again from the repository's files by the next ``pulumi up``).

Evaluating the program reads the context's files to compute the digest and builds nothing; ``pulumi up``
builds and pushes (``lakehouse_platform.components.aws.pushed_image``). Placed under the observability layer: its
always-on consumer is the exporter, and its owner the platform team that owns the code in it.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from lakehouse_platform.components.aws.context import AwsComponent, AwsContext, RegistryImage
from lakehouse_platform.components.aws.iam import GovernanceState
from lakehouse_platform.components.aws.pushed_image import PushedImage
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services import operations_support as support
from lakehouse_platform.services.definition import AwsPart
from lakehouse_platform.targets.lab_images import host_ca_certificates, operations_args
from lakehouse_platform.version import PLATFORM_VERSION

LAYER = Layer.OBSERVABILITY
#: The task definitions run x86_64 (``ecs.task_definition``): the image is built for it on any machine.
PLATFORM = "linux/amd64"
UNTAGGED_DAYS = 7
KEPT_IMAGES = 20
#: Build arguments of the building machine, passed to the build but not part of what identifies the image: its
#: extra CA certificates, so a build behind a TLS-intercepting proxy works as the host's own tools do.
HOST_ARGS = ("CA_CERTIFICATES",)


def lifecycle_policy() -> str:
    """The repository's lifecycle rules (module docstring): untagged images by age, tagged ones by count."""
    return json.dumps({"rules": [
        {"rulePriority": 1, "description": f"untagged images (an interrupted push) expire after {UNTAGGED_DAYS} days",
         "selection": {"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days",
                       "countNumber": UNTAGGED_DAYS},
         "action": {"type": "expire"}},
        {"rulePriority": 2, "description": f"the {KEPT_IMAGES} newest images are kept (never by age: a running "
                                           "task's image stays)",
         "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": KEPT_IMAGES},
         "action": {"type": "expire"}},
    ]}, indent=2)


def repository_name(spec: PlatformSpec, stack: str) -> str:
    """``<platform>-<stack>/operations``, in the characters ECR allows (lower case, digits, ``._-/``)."""
    allowed = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in f"{spec.name}-{stack}".lower())
    return f"{allowed.strip('._-')}/operations"


def runs_operations_image(spec: PlatformSpec, parts: tuple[AwsPart, ...]) -> bool:
    """Whether an enabled aws part runs the operations image (the exporter, the maintenance tasks)."""
    return any(spec.services[part.name].image == support.OPERATIONS_IMAGE
               for part in parts if part.name in spec.services)


class OperationsImage(AwsComponent):
    """The stack's ECR repository with its lifecycle rules, and the operations image built and pushed into it."""

    def __init__(self, ctx: AwsContext, gov: GovernanceState) -> None:
        spec = ctx.spec
        super().__init__("platform:aws:OperationsImage", f"{spec.name}-operations-image", ctx, LAYER)
        tags = ctx.tags(LAYER)
        self.repository = aws.ecr.Repository(
            f"{spec.name}-operations", name=repository_name(spec, pulumi.get_stack()),
            image_tag_mutability="IMMUTABLE", image_scanning_configuration={"scan_on_push": True},
            encryption_configurations=[{"encryption_type": "KMS", "kms_key": gov.key.arn}],
            force_delete=True, tags=tags, opts=self.child_opts())
        self.lifecycle = aws.ecr.LifecyclePolicy(f"{spec.name}-operations", repository=self.repository.name,
                                                 policy=lifecycle_policy(), opts=self.child_opts())
        token = aws.ecr.get_authorization_token_output(registry_id=self.repository.registry_id,
                                                       opts=ctx.invoke_opts())
        args = operations_args(spec, ctx.artifacts)
        identifying = {k: v for k, v in args.items() if k not in HOST_ARGS}
        self.image = PushedImage(
            f"{spec.name}-operations", repository=self.repository.repository_url,
            version=PLATFORM_VERSION, context=support.OPERATIONS_CONTEXT,
            files=support.operations_context_files(), dockerfile=support.OPERATIONS_DOCKERFILE, args=identifying,
            host_args={"CA_CERTIFICATES": host_ca_certificates()}, platform=PLATFORM,
            registry=pulumi.Output.secret({"server": token.proxy_endpoint, "username": token.user_name,
                                           "password": token.password}),
            opts=self.child_opts(depends_on=[self.lifecycle]))
        self.pushed = RegistryImage(reference=self.image.reference, repository_arn=self.repository.arn)
        self.register_outputs({"repository": self.repository.repository_url, "image": self.image.reference})

    def layer_outputs(self) -> dict[str, object]:
        return {"operations_image": self.image.reference}

    def stack_outputs(self) -> dict[str, object]:
        return {"operations_image": self.image.reference, "operations_repository": self.repository.repository_url}


def build(ctx: AwsContext, gov: GovernanceState, parts: tuple[AwsPart, ...]) -> OperationsImage | None:
    """The operations image pushed (and recorded in ``ctx.images``) when an enabled part runs it, else None."""
    if not runs_operations_image(ctx.spec, parts):
        return None
    built = OperationsImage(ctx, gov)
    ctx.images[support.OPERATIONS_IMAGE] = built.pushed
    return built
