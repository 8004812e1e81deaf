"""Images: what runs is pinned (a tag, never latest; advice: a digest as well)."""

from __future__ import annotations

from policies.adapters import image_refs, parse_image
from policies.resources import PolicyDef, Resource, StackContext, message


def check_image_pinned(resource: Resource, context: StackContext | None) -> list[str]:
    """Every image has an explicit version tag, never ``latest``."""
    out: list[str] = []
    for ref in image_refs(resource):
        image = parse_image(ref)
        if image.tag is None:
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


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("image-pinned", "Every image has an explicit version tag, never latest.", "resource", check_image_pinned),
    PolicyDef("image-digest-advised", "Images are best pinned by digest as well as tag.", "resource",
              check_image_digest, level="advisory"),
)
