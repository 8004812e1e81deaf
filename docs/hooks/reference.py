"""MkDocs hook: fills the configuration pages, and the pictures of the overview, targets and governance pages, from
the models and the registry at every build.

A page holds a marker where a generated part goes; ``lakehouse_platform.reference`` renders it from ``PlatformSpec``
(every key, type, default, allowed values, description), from the service registry (every service's
defaults and where it runs) and from the cloud stack (the secrets its runbook sets), so those pages cannot
drift from what the loader accepts. A marker no page
holds, or a field without a description, fails the build.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mkdocs.exceptions import PluginError

from lakehouse_platform.reference import UndocumentedField, cloud_secrets_reference, services_reference, spec_reference
from lakehouse_platform.review.pictures import figure as picture

MARKERS: dict[str, Callable[[], str]] = {
    "<!-- generated: configuration-reference -->": spec_reference,
    "<!-- generated: services -->": services_reference,
    "<!-- generated: cloud-secrets -->": cloud_secrets_reference,
    # Pictures drawn from the model of the stacks as committed (lakehouse_platform.review.pictures).
    "<!-- generated: picture-layers -->": lambda: picture("native", "layers"),
    "<!-- generated: picture-flows -->": lambda: picture("native", "flows"),
    "<!-- generated: picture-services -->": lambda: "\n\n".join(
        picture(stack, "services") for stack in ("native", "lab", "cloud")),
    "<!-- generated: picture-governance -->": lambda: "\n\n".join(
        picture(stack, "governance") for stack in ("native", "cloud")),
}
_filled: set[str] = set()


def on_pre_build(config: Any, **kwargs: Any) -> None:
    _filled.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    for marker, render in MARKERS.items():
        if marker in markdown:
            try:
                markdown = markdown.replace(marker, render())
            except UndocumentedField as error:
                raise PluginError(f"{page.file.src_uri}: {error}") from None
            _filled.add(marker)
    return markdown


def on_post_build(config: Any, **kwargs: Any) -> None:
    missing = [marker for marker in MARKERS if marker not in _filled]
    if missing:
        raise PluginError(f"no page holds {', '.join(missing)}: the generated reference would be missing")
