"""The lab's built Prometheus image: Debian's ``prometheus`` package, installed by its Dockerfile as natively."""

from __future__ import annotations

from pathlib import Path

from lakehouse_platform.services.built_image import BuiltImage

IMAGE = BuiltImage("prometheus", "prometheus", Path(__file__).with_name("lab"))
