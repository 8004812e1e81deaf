"""Credentials (governance): on aws, engines get short-lived credentials from the catalog, never static keys; a
catalog's root/admin credential is held by its bootstrap jobs and nothing else."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lakehouse_platform.policies.adapters import aws, config_files, env_entries
from lakehouse_platform.policies.resources import (
    ECS_TASK_DEFINITION,
    IAM_ACCESS_KEY,
    NATIVE_RUNTIME,
    PolicyDef,
    Resource,
    StackContext,
    index_of,
    message,
    service_of,
)
from lakehouse_platform.policies.wire import is_unknown, reveal, secret_values, strings

STATIC_KEY_SETTINGS = ("s3.aws-access-key", "s3.aws-secret-key")
STATIC_KEY_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def check_vended_credentials(resource: Resource, context: StackContext | None) -> list[str]:
    """On aws, engines get credentials from the catalog's vending role, never static keys."""
    rule = "governance-vended-credentials"
    if not resource.type.startswith("aws:"):
        return []
    out: list[str] = []
    if resource.type == IAM_ACCESS_KEY:
        user = reveal(resource.props.get("user"))
        whose = f" for IAM user {user}" if isinstance(user, str) and not is_unknown(user) else ""
        out.append(message(resource, rule, f"creates a static access key{whose}; "
                                           "engines get short-lived credentials from the catalog's vending role "
                                           "(task roles and vended credentials), never long-lived keys", context))
    texts = [*strings(resource.props), *(f.content for f in config_files(resource))]
    keys = sorted({k for s in texts for k in STATIC_KEY_SETTINGS if k in s})
    if keys:
        out.append(message(resource, rule, f"a Trino catalog file sets {', '.join(keys)}; on aws Trino reads S3 "
                                           "with credentials vended by the catalog (vended-credentials-enabled=true) "
                                           "or its task role", context))
    if resource.type == ECS_TASK_DEFINITION:
        for c in aws.container_definitions(resource) or []:
            names = [str(e.get("name")) for e in (c.get("environment") or []) + (c.get("secrets") or [])
                     if str(e.get("name")) in STATIC_KEY_VARIABLES]
            if names:
                out.append(message(resource, rule, f"container {c.get('name')} is given static AWS keys "
                                                   f"({', '.join(names)}); use the task role", context))
    return out


# ---- a catalog's root/admin credential ----------------------------------------------------------------------

#: Where a secret is kept rather than held: its own Secrets Manager secret and versions (governance's store).
SECRET_STORES = ("aws:secretsmanager/secret:Secret", "aws:secretsmanager/secretVersion:SecretVersion")
#: Shorter values are not searched for in other resources (they would match ordinary text).
MIN_VALUE_LENGTH = 8


@dataclass(frozen=True)
class AdminCredential:
    """A catalog's root/admin credential as the registry declares it (``CatalogRole.admin_*``)."""

    catalog: str
    secret: str  # the stack secret's name, e.g. polaris-root-secret
    client_id: str | None  # the admin's OAuth2 client id, e.g. root
    holders: tuple[str, ...]  # the catalog's bootstrap jobs

    @property
    def spellings(self) -> tuple[str, ...]:
        """How a resource names the secret: polaris-root-secret, POLARIS_ROOT_SECRET, polaris_root_secret."""
        return (self.secret, self.secret.upper().replace("-", "_"), self.secret.replace("-", "_"))

    def credential_re(self) -> re.Pattern[str] | None:
        """A client property or setting that authenticates as the admin: ``credential: root:...``, ``=root:``."""
        if self.client_id is None:
            return None
        return re.compile(r"credential[\"']?\s*[=:]\s*[\"']?" + re.escape(self.client_id) + ":", re.IGNORECASE)


def admin_credentials() -> list[AdminCredential]:
    """Every catalog's admin credentials, from the registry (whether or not the stack runs the catalog)."""
    from lakehouse_platform.services.registry import registry

    return [AdminCredential(name, secret, d.catalog.admin_client_id, d.catalog.admin_jobs)
            for name, d in registry().catalogs().items() if d.catalog is not None
            for secret in d.catalog.admin_secrets]


def _named_for(resource: Resource, service: str | None, holder: str) -> bool:
    """A resource made for ``holder``: its service label, or its name (``lakehouse-polaris-catalog-execution``)."""
    if service == holder:
        return True
    name = resource.name
    return name == holder or name.startswith(holder + "-") or f"-{holder}-" in name or name.endswith("-" + holder)


def _admin_values(resources: Sequence[Resource], credential: AdminCredential) -> set[str]:
    """The admin secret's value where a holder's environment shows it (the lab: a secret variable named for it)."""
    values: set[str] = set()
    for r in resources:
        for entry in env_entries(r):
            if any(s in entry.name for s in credential.spellings[1:2]) and isinstance(entry.value, str) \
                    and len(entry.value) >= MIN_VALUE_LENGTH and not is_unknown(entry.value):
                values.add(entry.value)
    return values


def _carries(resource: Resource, credential: AdminCredential, values: set[str]) -> Iterator[str]:
    """How a resource carries the admin credential (each way once): by the secret's name, the admin's client id in
    a credential setting, or the secret's value."""
    texts = [*strings(resource.props), *(f.content for f in config_files(resource))]
    for c in aws.container_definitions(resource) or [] if resource.type == ECS_TASK_DEFINITION else []:
        texts += [str(e.get("name")) for e in (c.get("secrets") or []) + (c.get("environment") or [])]
    named = sorted({s for s in credential.spellings for t in texts if s in t})
    if named:
        yield f"it names the secret {credential.secret} ({', '.join(named)})"
    pattern = credential.credential_re()
    as_admin = f"{credential.client_id}:"
    if pattern is not None and (any(pattern.search(t) for t in texts) or any(
            isinstance(v, str) and v.startswith(as_admin) for _, v in secret_values(resource.props))):
        yield f"a credential setting authenticates as {credential.catalog}'s {credential.client_id}"
    if any(v in t for v in values for t in texts):
        yield f"it holds the value of {credential.secret}"


def check_catalog_admin_only_in_bootstrap(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """No client profile, Trino catalog or task holds a catalog's root/admin credential, except that catalog's
    bootstrap jobs (Polaris: its bootstrap and catalog jobs); every client acts as its identity's own principal.

    A resource carries it when it names the secret (an environment variable, a ``${ENV:...}`` or Secrets Manager
    reference, an IAM policy granting it), authenticates as the admin client (``credential: root:...``) or holds
    its value. The secret's own Secrets Manager entry is its store, not a holder.
    """
    rule = "catalog-admin-only-in-bootstrap"
    index = index_of(resources)
    out: list[str] = []
    for credential in admin_credentials():
        values = _admin_values([r for r in resources if any(
            _named_for(r, service_of(r, context, index), h) for h in credential.holders)], credential)
        for r in resources:
            if r.type.startswith(("pulumi:", "platform:")) or (r.type in SECRET_STORES and credential.secret in r.name):
                continue  # the secret's own store (its Secrets Manager secret and version) keeps it, holds nothing
            if r.type == NATIVE_RUNTIME:
                continue  # the operations code as source text (it names variables): what runs it is judged
            service = service_of(r, context, index)
            if any(_named_for(r, service, holder) for holder in credential.holders):
                continue
            for how in _carries(r, credential, values):
                out.append(message(r, rule, f"carries {credential.catalog}'s root/admin credential: {how}; only "
                                            f"its bootstrap jobs ({', '.join(credential.holders)}) may hold it, every "
                                            "client acts as its identity's own principal", context, index))
    return out


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("governance-vended-credentials", "On aws, engines get credentials from the catalog's vending role, "
              "never static keys.", "resource", check_vended_credentials),
    PolicyDef("catalog-admin-only-in-bootstrap", "A catalog's root/admin credential is held by its bootstrap jobs "
              "alone: no client profile, Trino catalog or task carries it.", "stack",
              check_catalog_admin_only_in_bootstrap),
)
