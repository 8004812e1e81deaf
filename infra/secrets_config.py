"""The platform's secrets: read from secure stack config, lab defaults wrapped as Pulumi secrets.

Plans and config files only ever hold ``${secret:name}`` placeholders (see services.base.secret);
``render`` swaps them for the values, and any string that held one becomes a secret Output, so
it is encrypted in state and masked in logs and outputs.
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra.services.base import SECRET_TOKEN
from infra.spec import PlatformSpec, Target

# secret name -> (stack config key under the lakehouse namespace, lab default)
SECRETS: dict[str, tuple[str, str]] = {
    "postgres-password": ("postgresPassword", "lab-postgres-password"),
    "polaris-root-secret": ("polarisRootSecret", "lab-polaris-root-secret"),
    "lakekeeper-encryption-key": ("lakekeeperEncryptionKey", "lab-lakekeeper-encryption-key"),
}


# On aws no lab default is acceptable: these must be set as secrets in the stack's config, for
# the services that use them. (RDS keeps the database password itself, in Secrets Manager.)
REQUIRED_ON_AWS = {"polaris-root-secret": "polaris", "lakekeeper-encryption-key": "lakekeeper"}


def resolve_secrets(config: pulumi.Config, spec: PlatformSpec) -> dict[str, pulumi.Output[str]]:
    """Every named secret of the stack as a Pulumi secret.

    The lab store's identities get ``s3-secret-key-<identity>``; the first identity with Admin
    is the platform's own S3 credential (``s3-access-key`` / ``s3-secret-key``). On aws, a
    secret without a value in the stack config stops the run with the command that sets it.
    """
    values: dict[str, pulumi.Output[str]] = {}
    if spec.target is Target.AWS:
        missing = [SECRETS[name][0] for name, service in REQUIRED_ON_AWS.items()
                   if service in spec.enabled_services() and config.get_secret(SECRETS[name][0]) is None]
        if missing:
            raise pulumi.RunError("secrets required on the aws target are not set (lab defaults never reach the "
                                  "cloud):\n" + "\n".join(f"  - lakehouse:{key}: run `pulumi config set --secret "
                                                           f"lakehouse:{key} <value> --stack {pulumi.get_stack()}`"
                                                           for key in missing))
    for name, (key, default) in SECRETS.items():
        if spec.target is Target.AWS and name == "postgres-password":
            continue  # RDS manages the master password in Secrets Manager
        values[name] = config.get_secret(key) or pulumi.Output.secret(default)
    for name, identity in spec.identities.items():
        lab_default = identity.access_key.replace("access", "secret")  # lab-access-key -> lab-secret-key
        values[f"s3-secret-key-{name}"] = config.get_secret(identity.secret_config_key) or pulumi.Output.secret(lab_default)
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
        table = dict(zip(names, resolved))
        return SECRET_TOKEN.sub(lambda m: table[m.group(1)], value)

    return pulumi.Output.secret(pulumi.Output.all(*[secrets[n] for n in names]).apply(fill))
