"""The platform's secrets: read from secure stack config, lab defaults wrapped as Pulumi secrets.

Each service declares the secrets it uses (``Governance.secrets``). Plans and config files only
ever hold ``${secret:name}`` placeholders (``lakehouse_platform.placeholders.secret``); ``render`` swaps them for the
values, and any string that held one becomes a secret Output, so it is encrypted in state and
masked in logs and outputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.model.governance import catalog_token_key, identity_secret_key
from lakehouse_platform.placeholders import DERIVED_TOKEN, SECRET_TOKEN
from lakehouse_platform.services.registry import registry

#: Trino's PBKDF2 (PBKDF2WithHmacSHA1) needs at least 1000 iterations.
PBKDF2_ITERATIONS = 10_000


@dataclass(frozen=True)
class StackSecret:
    """A secret the stack reads from its config: ``pulumi config set --secret lakehouse:<key>``."""

    key: str  # the config key, without ``lakehouse:``
    secret: str  # its placeholder name (``${secret:<secret>}``)
    used_by: str  # the service that reads it


def required_on_aws(spec: PlatformSpec) -> list[StackSecret]:
    """Every secret the stack must set on the aws target (no lab default reaches the cloud): each enabled
    service's own, unless AWS keeps it (``managed_on``) or it is made from others, and each identity's secret of
    each enabled service that declares one needed on aws (``IdentitySecret``: Trino's passwords). On aws the
    catalogs authenticate their own principals (no gate tokens) and the store is S3 with IAM roles (no store keys).
    """
    enabled = [definition for definition in registry() if definition.name in spec.enabled_services()]
    found = [StackSecret(item.config_key, item.name, definition.name)
             for definition in enabled for item in definition.governance.secrets
             if Target.AWS not in item.managed_on and item.derive is None]
    found += [StackSecret(identity_secret_key(name, identity, item.kind, item.config_key), item.secret_name(name),
                          definition.name)
              for name, identity in spec.identities.items()
              for definition in enabled for item in definition.governance.identity_secrets if item.needed_on_aws]
    return list({item.key: item for item in found}.values())


def resolve_secrets(config: pulumi.Config, spec: PlatformSpec) -> dict[str, pulumi.Output[str]]:
    """Every named secret of the stack as a Pulumi secret.

    Each identity gets ``s3-secret-key-<identity>`` (the lab store), ``catalog-token-<identity>`` (its
    bearer token at the catalog gate) and, for each enabled service that declares one (``IdentitySecret``),
    ``<kind>-<identity>`` (e.g. ``trino-password-reader``); the first identity with Admin is the platform's
    own S3 credential (``s3-access-key`` / ``s3-secret-key``). On aws, a secret that is needed and has no
    value in the stack config stops the run with the command that sets it (no lab default reaches the cloud).
    """
    values: dict[str, pulumi.Output[str]] = {}
    enabled = spec.enabled_services()
    missing = [item.key for item in required_on_aws(spec) if config.get_secret(item.key) is None] \
        if spec.target is Target.AWS else []
    for definition in registry():
        for item in definition.governance.secrets:
            if spec.target in item.managed_on or item.derive is not None:
                continue
            given = config.get_secret(item.config_key)
            if given is None and spec.target is Target.AWS:
                continue
            values[item.name] = given if given is not None else pulumi.Output.secret(item.lab_default)
    for name, identity in spec.identities.items():
        per_identity = [
            # (secret, config key, lab default); on aws the catalogs authenticate themselves (no gate tokens)
            (f"catalog-token-{name}", catalog_token_key(name, identity), f"lab-{name}-catalog-token"),
            *((item.secret_name(name), identity_secret_key(name, identity, item.kind, item.config_key),
               item.lab_default(name))
              for definition in registry() if definition.name in enabled
              for item in definition.governance.identity_secrets),
        ]
        for secret_name, key, lab_default in per_identity:
            given = config.get_secret(key)
            if given is None and spec.target is Target.AWS:
                continue
            values[secret_name] = given if given is not None else pulumi.Output.secret(lab_default)
    if missing:
        raise pulumi.RunError(
            "secrets required on the aws target are not set (lab defaults never reach the cloud):\n"
            + "\n".join(f"  - lakehouse:{key}: run `pulumi config set --secret lakehouse:{key} <value> "
                        f"--stack {pulumi.get_stack()}`" for key in missing))
    for name, identity in spec.identities.items():
        lab_default = identity.access_key.replace("access", "secret")  # lab-access-key -> lab-secret-key
        given = config.get_secret(identity.secret_config_key)
        values[f"s3-secret-key-{name}"] = given if given is not None else pulumi.Output.secret(lab_default)
    admin = next((n for n, i in spec.identities.items() if "Admin" in i.actions), None)
    if admin and spec.target is not Target.AWS:
        values["s3-access-key"] = pulumi.Output.secret(spec.identities[admin].access_key)
        values["s3-secret-key"] = values[f"s3-secret-key-{admin}"]
    for definition in registry():
        for item in definition.governance.secrets:
            if item.derive is not None and definition.name in enabled:
                values[item.name] = render(item.derive(spec), values)
    return values


def pbkdf2_hash(name: str, value: str, iterations: int = PBKDF2_ITERATIONS) -> str:
    """``iterations:salt:hash`` (hex) of ``value``, as Trino's file password authenticator reads PBKDF2.

    The salt is derived from the secret's name and value, so the same password always renders the same
    file (no restart on every ``pulumi up``) while two users with one password still hash differently.
    """
    salt = hashlib.sha256(f"lakehouse-platform:{name}:{value}".encode()).digest()[:16]
    digest = hashlib.pbkdf2_hmac("sha1", value.encode(), salt, iterations, dklen=32)
    return f"{iterations}:{salt.hex()}:{digest.hex()}"


def derive(kind: str, name: str, value: str) -> str:
    """What a derived placeholder (``${sha256:x}``, ``${pbkdf2:x}``) renders to for the secret's value."""
    if kind == "sha256":
        return hashlib.sha256(value.encode()).hexdigest()
    return pbkdf2_hash(name, value)


def render(value: Any, secrets: dict[str, pulumi.Output[str]]) -> Any:
    """``value`` with secret (and derived) placeholders filled; a secret Output if it held any, else unchanged."""
    if not isinstance(value, str):
        return value
    names = list(dict.fromkeys([*SECRET_TOKEN.findall(value), *(n for _, n in DERIVED_TOKEN.findall(value))]))
    if not names:
        return value
    unknown = [n for n in names if n not in secrets]
    if unknown:
        raise KeyError(f"unknown secret placeholder(s): {', '.join(unknown)}; known: {', '.join(sorted(secrets))}")

    def fill(resolved: list[str]) -> str:
        table = dict(zip(names, resolved, strict=True))
        text = SECRET_TOKEN.sub(lambda m: table[m.group(1)], value)
        return DERIVED_TOKEN.sub(lambda m: derive(m.group(1), m.group(2), table[m.group(2)]), text)

    return pulumi.Output.secret(pulumi.Output.all(*[secrets[n] for n in names]).apply(fill))


def render_inputs(value: Any, secrets: Mapping[str, pulumi.Output[str]]) -> Any:
    """``value`` with every secret placeholder, at any depth, a Pulumi secret."""
    if isinstance(value, Mapping):
        return {k: render_inputs(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [render_inputs(v, secrets) for v in value]
    return render(value, dict(secrets))
