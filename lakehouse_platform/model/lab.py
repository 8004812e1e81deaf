"""How the lab (the docker target) gets its images: the upstream projects', or built here from the pinned artifacts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from lakehouse_platform.model.base import Strict, pinned_image

#: Debian bookworm, slim, as docker-library/official-images tags it (library/debian: bookworm-20260202-slim,
#: Debian 12.13). `make lab-base` debootstraps an image under this name where no registry is reachable.
DEFAULT_BASE_IMAGE = "debian:bookworm-20260202-slim"

class LabSpec(Strict):
    """The lab's images: which kind, on which base."""

    images: Literal["upstream", "built"] = Field(
        default="upstream",
        description="upstream: each service's pinned upstream image (needs a container registry). built: each "
                    "service's image built here (lakehouse lab images build) from the same verified "
                    "artifacts "
                    "the native target runs, on base_image; Polaris and Lakekeeper have no artifact and are refused "
                    "unless their upstream images are present locally.")
    base_image: str = Field(
        default=DEFAULT_BASE_IMAGE,
        description="Debian bookworm image the platform's own images build on (the operations image, and every "
                    "built service image); `make lab-base` debootstraps one under this name from Debian's mirror.")

    published_port_offset: int = Field(
        default=0, ge=0, le=60000,
        description="Added to every published (external) port of the lab, defaults and the stack's own alike, so one "
                    "setting moves them all clear of another platform on this host (e.g. 20000: Trino's 8080 is "
                    "published on 28080; the native stack's default ports stay free). Containers and the ports "
                    "services reach each other on are unchanged; the stack outputs carry the moved ports.")

    @field_validator("base_image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        try:
            return pinned_image(value)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an image name with a tag (e.g. {DEFAULT_BASE_IMAGE}): {exc}") from None
