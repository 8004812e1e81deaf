"""Images: what runs is pinned (a tag, never latest, or a digest; advice: a digest as well), and what the platform
pushes itself is named by digest on ECS."""

from __future__ import annotations

import re

from lakehouse_platform.policies.adapters import aws, image_refs, parse_image
from lakehouse_platform.policies.resources import ECS_TASK_DEFINITION, PolicyDef, Resource, StackContext, message

#: An image in an ECR registry: ``<account>.dkr.ecr.<region>.amazonaws.com[.cn]/<repository>``.
ECR_IMAGE = re.compile(r"^\d{12}\.dkr\.ecr(?:-fips)?\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?/")


def check_image_pinned(resource: Resource, context: StackContext | None) -> list[str]:
    """Every image has an explicit version tag, never ``latest``, or a digest."""
    out: list[str] = []
    for ref in image_refs(resource):
        image = parse_image(ref)
        if image.tag is None and image.digest is None:  # a digest pins more than any tag
            out.append(message(resource, "image-pinned", f"image {ref!r} has no tag; pin a version such as "
                                                         f"{ref.partition('@')[0]}:1.2.3", context))
        elif image.tag == "latest":
            out.append(message(resource, "image-pinned", f"image {ref!r} uses 'latest', which moves under you; "
                                                         "pin an explicit version tag", context))
    return out


def check_image_digest(resource: Resource, context: StackContext | None) -> list[str]:
    """Advice: pin images by digest as well, so a re-pushed tag cannot change what runs."""
    return [message(resource, "image-digest-advised",
                    f"image {ref!r} is pinned by tag only; add its digest ({ref}@sha256:...) so a re-pushed tag "
                    "cannot change what runs", context)
            for ref in image_refs(resource)
            if parse_image(ref).digest is None and parse_image(ref).tag not in (None, "latest")]


def check_own_image_by_digest(resource: Resource, context: StackContext | None) -> list[str]:
    """On ECS, an image from the stack's registry (ECR) is named by digest, and the platform's own image never by
    the local name it was built under (no registry serves it: the task could never start)."""
    if resource.type != ECS_TASK_DEFINITION:
        return []
    from lakehouse_platform.services.operations_support import OPERATIONS_IMAGE

    local = OPERATIONS_IMAGE.partition(":")[0]
    out: list[str] = []
    for container in aws.container_definitions(resource) or []:
        ref = image_refs_of(container)
        if ref is None:
            continue
        name = f"container {container.get('name')!r}"
        if ref.partition("@")[0].rsplit(":", 1)[0] == local:
            out.append(message(resource, "ecs-own-image-by-digest",
                               f"{name} runs {ref!r}, the platform's image under the name it was built with locally, "
                               "which no registry serves; the aws target pushes it and names it by digest", context))
        elif ECR_IMAGE.match(ref) and parse_image(ref).digest is None:
            out.append(message(resource, "ecs-own-image-by-digest",
                               f"{name} runs {ref!r} from an ECR repository by tag; name it by the digest the push "
                               f"returned ({ref.rsplit(':', 1)[0]}@sha256:...) so the task runs what was pushed",
                               context))
    return out


def image_refs_of(container: dict[str, object]) -> str | None:
    """A container definition's image reference, when it is known."""
    refs = image_refs(Resource(ECS_TASK_DEFINITION, "", {"containerDefinitions": [container]}))
    return refs[0] if refs else None


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("image-pinned", "Every image has an explicit version tag, never latest, or a digest.", "resource",
              check_image_pinned),
    PolicyDef("ecs-own-image-by-digest", "ECS names the images the platform pushes by digest, never by a local name.",
              "resource", check_own_image_by_digest),
    PolicyDef("image-digest-advised", "Images are best pinned by digest as well as tag.", "resource",
              check_image_digest, level="advisory"),
)
