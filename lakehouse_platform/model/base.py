"""What every config model shares: strictness, sizes, and the three targets."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|K|M|G|Ki|Mi|Gi)\s*$")
_UNITS = {
    "B": 1, "K": 1000, "KB": 1000, "M": 1000**2, "MB": 1000**2, "G": 1000**3, "GB": 1000**3,
    "TB": 1000**4, "Ki": 1024, "KiB": 1024, "Mi": 1024**2, "MiB": 1024**2, "Gi": 1024**3,
    "GiB": 1024**3, "TiB": 1024**4,
}
SIZE_HELP = "a number with a unit, such as 512MiB, 1.5GiB or 800MB"


def parse_size(value: str) -> int:
    """Bytes in a size such as ``512MiB`` or ``1.5GB``; ``ValueError`` naming the allowed form otherwise."""
    match = _SIZE_RE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; use {SIZE_HELP}")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _size_text(value: str) -> str:
    parse_size(value)
    return value


#: A size as config says it (``512MiB``, ``1.5GB``), checked where it is read: ``parse_size`` gives its bytes.
Size = Annotated[str, AfterValidator(_size_text)]


def pinned_image(value: str) -> str:
    """``value`` when it names an image by an explicit tag (a registry with a port allowed, a digest optional);
    else ``ValueError`` saying what is missing. Services' images and the lab's base image alike."""
    name, _, digest = value.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        raise ValueError(f"image {value!r} has no tag; pin a version such as {value}:1.2.3")
    if last.rsplit(":", 1)[1] in ("latest", ""):
        raise ValueError(f"image {value!r} uses 'latest'; pin an explicit version tag")
    if digest and not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise ValueError(f"image {value!r} has a malformed digest; use @sha256:<64 hex digits>")
    return value


class Target(str, Enum):
    """Where one declaration is deployed."""

    DOCKER = "docker"
    AWS = "aws"
    NATIVE = "native"


class Strict(BaseModel):
    """Base of every config model: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)
