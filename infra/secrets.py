"""The platform's secrets: read from secure stack config, lab defaults wrapped as Pulumi secrets.

Each service declares the secrets it uses (``ServiceDefinition.secrets``). Plans and config files only
ever hold ``${secret:name}`` placeholders (``services.base.secret``); ``render`` swaps them for the
values, and any string that held one becomes a secret Output, so it is encrypted in state and
masked in logs and outputs.
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra.services import registry
from infra.services.base import SECRET_TOKEN
from infra.spec import PlatformSpec, Target


def resolve_secrets(config: pulumi.Config, spec: PlatformSpec) -> dict[str, pulumi.Output[str]]:
    """Every named secret of the stack as a Pulumi secret.

    The lab store's identities get ``s3-secret-key-<identity>``; the first identity with Admin
    is the platform's own S3 credential (``s3-access-key`` / ``s3-secret-key``). On aws, a secret
    of an enabled service without a value in the stack config stops the run with the command that
    sets it (no lab default reaches the cloud).
    """
    values: dict[str, pulumi.Output[str]] = {}
    enabled = spec.enabled_services()
    missing: list[str] = []
    for definition in registry():
        for item in definition.secrets:
            if spec.target in item.managed_on:
                continue
            given = config.get_secret(item.config_key)
            if given is None and spec.target is Target.AWS:
                if definition.name in enabled:
                    missing.append(item.config_key)
                continue
            values[item.name] = given if given is not None else pulumi.Output.secret(item.lab_default)
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
    return values


def render(value: Any, secrets: dict[str, pulumi.Output[str]]) -> Any:
    """``value`` with secret placeholders filled; a secret Output if it held any, else unchanged."""
    if not isinstance(value, str):
        return value
    names = SECRET_TOKEN.findall(value)
    if not names:
        return value
    unknown = [n for n in names if n not in secrets]
    if unknown:
        raise KeyError(f"unknown secret placeholder(s): {', '.join(unknown)}; known: {', '.join(sorted(secrets))}")

    def fill(resolved: list[str]) -> str:
        table = dict(zip(names, resolved, strict=True))
        return SECRET_TOKEN.sub(lambda m: table[m.group(1)], value)

    return pulumi.Output.secret(pulumi.Output.all(*[secrets[n] for n in names]).apply(fill))
