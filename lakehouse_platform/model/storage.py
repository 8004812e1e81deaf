"""The warehouse bucket and what may happen to it (the identities that reach it: ``model.governance``)."""

from __future__ import annotations

import ipaddress
import re
from typing import ClassVar

from pydantic import Field, field_validator

from lakehouse_platform.model.base import Strict
from lakehouse_platform.model.layers import Layer

# S3's naming rules for general purpose buckets (docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
_BUCKET_CHARS = re.compile(r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def bucket_name_problem(name: str) -> str | None:
    """Why S3 would refuse ``name`` as a bucket name, or None."""
    if not 3 <= len(name) <= 63:
        return f"{name!r} has {len(name)} characters; a bucket name has 3 to 63"
    if not _BUCKET_CHARS.match(name):
        return (f"{name!r} may hold only lowercase letters, digits, dots and hyphens, "
                "and must begin and end with a letter or digit")
    if ".." in name:
        return f"{name!r} has two adjacent dots"
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return f"{name!r} is formatted as an IP address"
    for prefix in _RESERVED_PREFIXES:
        if name.startswith(prefix):
            return f"{name!r} begins with the reserved prefix {prefix!r}"
    for suffix in _RESERVED_SUFFIXES:
        if name.endswith(suffix):
            return f"{name!r} ends with the reserved suffix {suffix!r}"
    return None


class StorageSpec(Strict):
    """The warehouse bucket and what may happen to it."""

    LAYER: ClassVar[Layer] = Layer.STORAGE  # the layer its keys belong to (change review)

    bucket: str = Field(default="warehouse", description="Bucket name (S3's naming rules apply in full).")
    warehouse_prefixes: list[str] = Field(
        default_factory=lambda: [""], min_length=1,
        description="Key prefixes in the bucket holding Iceberg tables ('' = the whole bucket); no lifecycle rule "
                    "may expire objects under them.",
    )
    region: str = Field(default="us-east-1", description="S3 region clients sign for.")
    noncurrent_version_expiration_days: int = Field(
        default=30, ge=1, le=3650, description="Days after which noncurrent object versions expire (cloud)."
    )
    abort_incomplete_multipart_days: int = Field(default=7, ge=1, le=365, description="Abort stale multipart uploads.")
    replica_bucket: bool = Field(default=False, description="Replicate to a second bucket (cloud recovery).")

    @field_validator("warehouse_prefixes")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        for prefix in value:
            if "://" in prefix or prefix.startswith("/") or ".." in prefix.split("/"):
                raise ValueError(f"{prefix!r} is not a key prefix inside the bucket: no scheme or bucket, no leading "
                                 "'/' and no '..' (e.g. 'warehouse/' or '' for the whole bucket)")
        return value

    @field_validator("bucket")
    @classmethod
    def _bucket_name(cls, value: str) -> str:
        problem = bucket_name_problem(value)
        if problem:
            raise ValueError(f"{problem} (S3 bucket naming rules)")
        return value
