"""The warehouse bucket, what may happen to it, and the lab store's identities."""

from __future__ import annotations

import ipaddress
import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from infra.spec.base import Strict
from infra.spec.layers import Layer

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


_ACCESS_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{2,127}$")
# A key of the stack's ``lakehouse:`` namespace, named without it (``pulumi config set --secret lakehouse:<key>``).
_CONFIG_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,99}$")


def _check_config_key(value: str) -> None:
    if not _CONFIG_KEY.match(value):
        raise ValueError(f"{value!r} is not a stack config key: letters, digits, '_' and '-', starting with a "
                         "letter, named without the 'lakehouse:' namespace (the platform adds it)")


class IdentitySpec(Strict):
    """One principal of the platform: an S3 identity of the lab store (an IAM role on aws), a catalog
    bearer token and a principal at every service that declares per-identity secrets (a Trino user),
    all with the same rights (see ``infra.spec.governance``).

    Its access key and each of its stack config keys are its own: two identities sharing one would
    share a credential, and whichever the store or the catalog gate reads last would hold both rights.
    """

    LAYER: ClassVar[Layer] = Layer.GOVERNANCE  # the layer its keys belong to (change review)
    ON_CHANGE: ClassVar[str] = ("every enforcement point takes the new rights: the store's identities, the catalog "
                                "gate and Trino are redeployed (each restarts where its rendered config changed)")

    access_key: str = Field(description="Access key id of the lab store (not secret): letters, digits, . _ -.")
    actions: list[Literal["Admin", "Read", "Write", "List", "Tagging"]] = Field(
        min_length=1, description="SeaweedFS S3 actions granted (on aws: the S3 actions of the identity's IAM role)."
    )
    secret_config_key: str = Field(
        description="Stack config key (secret) holding the secret key; a lab default applies when unset."
    )
    catalog_token_config_key: str | None = Field(
        default=None, description="Stack config key (secret) of the identity's catalog bearer token; "
                                  "default catalogToken<Name>; a lab default applies when unset (not on aws).")
    secret_keys: dict[str, str] = Field(
        default_factory=dict,
        description="Stack config keys (secret) of the identity's own credential at each service that declares one, "
                    "by kind (e.g. trino-password: the identity's Trino password); default <kind in camelCase>"
                    "<Name> (trinoPasswordReader); a lab default applies when unset (not on aws).")

    @field_validator("access_key")
    @classmethod
    def _access_key(cls, value: str) -> str:
        if not _ACCESS_KEY.match(value):
            raise ValueError(f"{value!r} is not an access key id: 3 to 128 letters, digits, '.', '_' and '-', "
                             "starting with a letter or digit (it is part of every signed request)")
        return value

    @field_validator("actions")
    @classmethod
    def _actions(cls, value: list[str]) -> list[str]:
        repeated = sorted({a for a in value if value.count(a) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed twice; list each action once")
        return value

    @field_validator("secret_config_key", "catalog_token_config_key")
    @classmethod
    def _config_key(cls, value: str | None) -> str | None:
        if value is not None:
            _check_config_key(value)
        return value

    @field_validator("secret_keys")
    @classmethod
    def _secret_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for kind, key in value.items():
            try:
                _check_config_key(key)
            except ValueError as exc:
                raise ValueError(f"{kind}: {exc}") from None
        return value


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
