"""Who may read and write what: the platform's identities, their grants per namespace, and the one rule that
decides (governance).

Every identity of ``PlatformSpec.identities`` is one principal everywhere it is checked: an S3 identity
of the lab store (an IAM role on aws), a bearer token at the catalog gate, and a principal of its own at
every service that declares per-identity secrets (a Trino user with its own password; where a catalog
authenticates its own principals, a principal of that catalog). Its
*role* follows from its store actions: ``Admin`` is the platform's own identity, ``Write`` a writer,
anything else a reader.

What an identity may do is data: ``grants`` maps a namespace (or ``*``, every namespace) to the actions
it may take there:

- ``read``: list the namespace and its tables, load tables and read their files;
- ``write``: commit to an existing table (appends, overwrites, deletes, schema and property changes,
  snapshot expiry) and write its files;
- ``manage``: create, drop and rename tables (and views) in the namespace, and create, drop and change
  the namespace itself.

No action implies another, and every list names what it grants in full: ``write`` without ``read`` is
refused (a writer reads a table's metadata before every commit) and so is ``manage`` without ``write``
(creating a table writes its first metadata file, and a drop with purge deletes files). A named
namespace's list *replaces* ``*`` for that namespace (the most specific entry wins, so ``{"*": [read,
write], "finance": [read]}`` makes finance read-only, and ``"finance": []`` closes it). A nested
namespace (``shop.eu``) follows its top level (``shop``). Without ``grants`` an identity has its role's
(``ROLE_GRANTS``), so a stack that declares none means what it meant before grants existed.

``may`` is the decision (``lakehouse_platform.runtime.grants``, one rule): every enforcement point (the catalog
gate, Trino's access rules, the store's identities, IAM on aws, the catalogs' own principals) is rendered from it
or decides with it, never from roles.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from lakehouse_platform.model.base import Strict
from lakehouse_platform.model.layers import Layer
from lakehouse_platform.runtime.grants import EVERY_NAMESPACE, top_level
from lakehouse_platform.runtime.grants import may as granted

Role = Literal["platform", "writer", "reader"]
Action = Literal["read", "write", "manage"]
#: The actions, each needing the one before it (``write`` needs ``read``, ``manage`` needs ``write``).
ACTIONS: tuple[Action, ...] = ("read", "write", "manage")
#: What an identity without ``grants`` may do: its role's rights before grants existed (the gate let
#: platform and writer identities do everything, readers only read).
ROLE_GRANTS: dict[Role, dict[str, tuple[Action, ...]]] = {
    "platform": {EVERY_NAMESPACE: ACTIONS},
    "writer": {EVERY_NAMESPACE: ACTIONS},
    "reader": {EVERY_NAMESPACE: ("read",)},
}
#: Identity names become parts of secret names (``s3-secret-key-<name>``) and Trino user names.
IDENTITY_NAME = re.compile(r"^[a-z][a-z0-9-]{1,30}$")
#: A namespace the platform knows (the tables' rule: Iceberg identifiers as every engine accepts them).
NAMESPACE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: The store actions a read-only identity may hold.
READ_ONLY_ACTIONS = frozenset({"Read", "List"})
_ACCESS_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{2,127}$")
# A key of the stack's ``lakehouse:`` namespace, named without it (``pulumi config set --secret lakehouse:<key>``).
_CONFIG_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,99}$")


def _check_config_key(value: str) -> None:
    if not _CONFIG_KEY.match(value):
        raise ValueError(f"{value!r} is not a stack config key: letters, digits, '_' and '-', starting with a "
                         "letter, named without the 'lakehouse:' namespace (the platform adds it)")


def may(grants: Mapping[str, Collection[str]], action: Action, namespace: str | Iterable[str]) -> bool:
    """Whether grants allow ``action`` on ``namespace``: the one rule (``lakehouse_platform.runtime.grants``), which
    the catalog gate decides its requests with too. Every enforcer's config is rendered from it
    (``PlatformSpec.may``, ``access_table``)."""
    return granted(grants, action, namespace)


def access_table(grants: Mapping[str, Collection[str]], namespaces: Iterable[str]) -> dict[str, tuple[Action, ...]]:
    """What ``grants`` allow on each of ``namespaces`` and on any other (``*``), decided by ``may``.

    The form every enforcer's config is rendered from: each known namespace with its actions, and ``*``
    for a namespace nobody declared (made at run time).
    """
    keys = [*dict.fromkeys(top_level(n) for n in namespaces), EVERY_NAMESPACE]
    return {ns: tuple(a for a in ACTIONS if may(grants, a, ns)) for ns in keys}


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


class IdentitySpec(Strict):
    """One principal of the platform: an S3 identity of the lab store (an IAM role on aws), a catalog
    bearer token and a principal at every service that declares per-identity secrets (a Trino user),
    all with the same rights: its ``grants``.

    Its access key and each of its stack config keys are its own: two identities sharing one would
    share a credential, and whichever the store or the catalog gate reads last would hold both rights.
    """

    LAYER: ClassVar[Layer] = Layer.GOVERNANCE  # the layer its keys belong to (change review)
    ON_CHANGE: ClassVar[str] = ("every enforcement point takes the new rights: the store's identities, the catalog "
                                "gate and Trino are redeployed (each restarts where its rendered config changed)")

    access_key: str = Field(description="Access key id of the lab store (not secret): letters, digits, . _ -.")
    actions: list[Literal["Admin", "Read", "Write", "List", "Tagging"]] = Field(
        min_length=1, description="The kinds of store action it may hold (SeaweedFS S3 actions; on aws the S3 "
                                  "actions of its IAM role): Admin makes it the platform's own identity, Write a "
                                  "writer, else a reader. Where they apply follows from its grants.")
    grants: dict[str, list[Action]] | None = Field(
        default=None, description="What it may do per namespace: namespace (or '*' for every other one) -> actions "
                                  "among read, write, manage (write needs read, manage needs write; a named "
                                  "namespace's list replaces '*' there). Default: its role's (platform and writer "
                                  "{'*': [read, write, manage]}, reader {'*': [read]}).")
    team: str | None = Field(
        default=None, description="The team it acts for: a declared table's owner should be a team whose identity "
                                  "may write the table's namespace (the review flags one that is not).")
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

    @field_validator("team")
    @classmethod
    def _team(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty team names nobody: name the team, or leave team unset")
        return value.strip() if value is not None else None

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

    @model_validator(mode="after")
    def _grants_whole(self) -> IdentitySpec:
        """Each entry names a namespace (or ``*``) and grants what it grants in full; the store's actions agree."""
        if self.grants is None:
            return self
        for namespace, actions in self.grants.items():
            here = f"grants.{namespace}"
            if namespace != EVERY_NAMESPACE and not NAMESPACE_NAME.match(namespace):
                raise ValueError(f"{here}: {namespace!r} is not a namespace: a top-level namespace (lowercase "
                                 "letters, digits and _, starting with a letter or _; a nested one follows its top "
                                 "level) or '*' for every namespace without an entry of its own")
            repeated = sorted({a for a in actions if actions.count(a) > 1})
            if repeated:
                raise ValueError(f"{here}: {', '.join(repeated)} listed twice; list each action once")
            for action, needs, why in (
                    ("write", "read", "a writer reads a table's metadata before every commit"),
                    ("manage", "write", "creating a table writes its first metadata file and a drop with purge "
                                        "deletes files: the store sees both as writes")):
                if action in actions and needs not in actions:
                    raise ValueError(f"{here}: {action} without {needs} is refused ({why}); no action implies "
                                     f"another: list {needs} too, or remove {action}")
            if not actions and EVERY_NAMESPACE not in self.grants:
                raise ValueError(f"{here}: an empty list grants nothing, and there is no '*' entry for it to narrow; "
                                 "remove it (a namespace without an entry is closed)")
        granted = {a for actions in self.grants.values() for a in actions}
        store = set(self.actions)
        for action, store_action in (("read", "Read"), ("write", "Write")):
            if action in granted and store_action not in store and "Admin" not in store:
                raise ValueError(f"grants: {action} on {self.granting(action)} contradicts actions "
                                 f"({', '.join(self.actions)}): the store would refuse every {action} of it; add "
                                 f"{store_action} to actions or remove {action} from grants")
        if "Write" in store and "Admin" not in store and "write" not in granted:
            raise ValueError(f"grants: no namespace grants write, which contradicts actions ({', '.join(self.actions)}"
                             "): Write makes it a writer; remove Write from actions (a reader) or grant write "
                             "somewhere")
        return self

    def granting(self, action: Action) -> str:
        """The grant keys that give ``action``, for messages: ``'shop', 'finance'``."""
        return ", ".join(repr(ns) for ns, actions in (self.grants or {}).items() if action in actions)


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
    """Which identity each use gets, the namespaces grants may name beyond the declared tables', Trino's TLS."""

    LAYER: ClassVar[Layer] = Layer.GOVERNANCE  # the layer its keys belong to (change review)

    writer: str = Field(default="writer", description="The identity engines that write use (the host profiles' "
                                                       "default); it needs Write and must not be Admin.")
    reader: str = Field(default="reader", description="The read-only identity: it reads through every engine and "
                                                       "every write through any of them is refused.")
    exporter: str = Field(default="reader", description="The identity the metrics exporter reads the catalog and "
                                                         "the tables' metadata as: read on every namespace, nothing "
                                                         "else (it writes nowhere).")
    maintenance: str = Field(default="writer", description="The identity scheduled maintenance runs as (the "
                                                            "scheduler, aws's maintenance tasks): read and write where "
                                                            "it maintains tables, never Admin, never manage needed.")
    namespaces: list[str] = Field(
        default_factory=list, description="Namespaces grants may name besides those of declared tables (a grant on "
                                          "any other namespace is refused).")
    tls_days: int = Field(default=825, ge=30, le=3650,
                          description="Validity of the platform's self-signed TLS certificates (Trino's HTTPS); a "
                                      "`pulumi up` within 30 days of expiry issues a new one.")

    @model_validator(mode="after")
    def _namespaces(self) -> GovernanceSpec:
        for index, namespace in enumerate(self.namespaces):
            if not NAMESPACE_NAME.match(namespace):
                raise ValueError(f"namespaces.{index}: {namespace!r} is not a namespace: lowercase letters, digits and "
                                 "_, starting with a letter or _ (top-level namespaces only)")
            if self.namespaces.index(namespace) != index:
                raise ValueError(f"namespaces.{index}: {namespace!r} is listed twice; list each namespace once")
        return self
