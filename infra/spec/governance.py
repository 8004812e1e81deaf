"""Who may read and write what: which identity each use gets, and the checks that fail closed (governance).

Every identity of ``PlatformSpec.identities`` is one principal everywhere it is checked: an S3 identity
of the lab store (or an IAM role on aws), a bearer token at the catalog gate, and a principal of its own
at every service that declares per-identity secrets (a Trino user with its own password). Its *role*
follows from its store actions: ``Admin`` is the platform's own identity, ``Write`` a writer, anything
else a reader. ``governance.writer`` names the identity the host
profiles hand to engines that write, ``governance.reader`` the read-only one.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import ClassVar, Literal

from pydantic import Field

from infra.spec.base import Strict
from infra.spec.layers import Layer
from infra.spec.storage import IdentitySpec

Role = Literal["platform", "writer", "reader"]
#: Identity names become parts of secret names (``s3-secret-key-<name>``) and Trino user names.
IDENTITY_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")
#: The store actions a read-only identity may hold.
READ_ONLY_ACTIONS = frozenset({"Read", "List"})


def role_of(actions: Collection[str]) -> Role:
    """The role an identity's store actions give it: Admin is the platform, Write a writer, else a reader."""
    if "Admin" in actions:
        return "platform"
    if "Write" in actions:
        return "writer"
    return "reader"


def config_key_suffix(name: str) -> str:
    """``catalog-reader`` -> ``CatalogReader``: the part of a derived stack config key an identity names."""
    return "".join(part.title() for part in re.split(r"[-_]", name) if part)


def catalog_token_key(name: str, identity: IdentitySpec) -> str:
    """The stack config key of an identity's catalog bearer token (``catalogToken<Name>`` unless it names one)."""
    return identity.catalog_token_config_key or f"catalogToken{config_key_suffix(name)}"


def identity_secret_key(name: str, identity: IdentitySpec, kind: str, prefix: str) -> str:
    """The stack config key of an identity's secret of one kind (a service's ``IdentitySecret``):
    ``<prefix><Name>`` (``trinoPasswordReader``) unless the identity names one under ``secret_keys``."""
    return identity.secret_keys.get(kind) or f"{prefix}{config_key_suffix(name)}"


def identity_config_keys(name: str, identity: IdentitySpec, kinds: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each stack config key an identity's secrets are read from, by the field that names it (or defaults it).

    ``kinds`` are the services' per-identity secrets (kind -> config key prefix, from the registry).
    """
    keys = {"secret_config_key": identity.secret_config_key,
            "catalog_token_config_key": catalog_token_key(name, identity)}
    for kind, prefix in (kinds or {}).items():
        keys[f"secret_keys.{kind}"] = identity_secret_key(name, identity, kind, prefix)
    return keys


class GovernanceSpec(Strict):
    """Which identity each use gets; everything else follows from the identities' actions."""

    LAYER: ClassVar[Layer] = Layer.GOVERNANCE  # the layer its keys belong to (change review)

    writer: str = Field(default="writer", description="The identity engines that write use (the host profiles' "
                                                       "default); it needs Write and must not be Admin.")
    reader: str = Field(default="reader", description="The read-only identity: it reads through every engine and "
                                                       "every write through any of them is refused.")
    tls_days: int = Field(default=825, ge=30, le=3650,
                          description="Validity of the platform's self-signed TLS certificates (Trino's HTTPS); a "
                                      "`pulumi up` within 30 days of expiry issues a new one.")
