"""Secrets: no credential in plain text."""

from __future__ import annotations

import re
from collections.abc import Iterator

from policies.adapters import aws, config_files, env_entries
from policies.resources import (
    ECS_TASK_DEFINITION,
    RDS_CLUSTER,
    RDS_INSTANCE,
    PolicyDef,
    Resource,
    StackContext,
    message,
)
from policies.wire import is_secret, is_unknown

# An environment variable whose name says it holds a credential (POSTGRES_PASSWORD, S3_SECRET_KEY,
# AWS_SECRET_ACCESS_KEY, POLARIS_ROOT_SECRET, LAKEKEEPER__PG_ENCRYPTION_KEY, ...). *_FILE names a path.
CREDENTIAL_ENV_RE = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|ENCRYPTION_KEY|API_KEY)", re.IGNORECASE)
# A config-file key that holds a credential (password=, s3.aws-secret-key=, "secretKey":, oauth2.credential=).
CREDENTIAL_KEY_RE = re.compile(
    r"(password|passwd|secret|secret[-_.]?key|secret[-_.]?access[-_.]?key|credential|token|api[-_.]?key|"
    r"private[-_.]?key|encryption[-_.]?key)$",
    re.IGNORECASE,
)
URL_PASSWORD_RE = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@", re.IGNORECASE)
FILE_PAIR_RE = re.compile(r"""^\s*["']?([A-Za-z0-9_.\-]+)["']?\s*[:=]\s*["']?([^"'\n]*?)["']?\s*,?\s*$""", re.MULTILINE)
# A value that refers to a credential held elsewhere (${ENV:X}, ${secret:x}, {{ x }}, $X).
REFERENCE_RE = re.compile(r"\$\{[^}]+\}|\{\{.*\}\}|^\$[A-Z_][A-Z0-9_]*$")


def is_credential_name(name: str) -> bool:
    """An environment variable name that says it holds a credential (``*_FILE`` names a path)."""
    return bool(CREDENTIAL_ENV_RE.search(name)) and not name.upper().endswith("_FILE")


def credential_pairs(content: str) -> Iterator[tuple[str, str]]:
    """(key, value) pairs of a properties/YAML/JSON file whose key names a credential and whose value is literal."""
    for match in FILE_PAIR_RE.finditer(content):
        key, value = match.group(1), match.group(2).strip()
        if not CREDENTIAL_KEY_RE.search(key) or not value:
            continue
        if REFERENCE_RE.search(value) or value.lower() in ("true", "false", "null", "none") or value in ("[", "{"):
            continue
        yield key, value


def _url_password(value: str) -> str | None:
    """The password of a URL with one embedded (``scheme://user:password@host``), unless it is a reference."""
    match = URL_PASSWORD_RE.search(value)
    if match is None or REFERENCE_RE.search(match.group(1)):
        return None
    return match.group(1)


def check_secrets_not_plaintext(resource: Resource, context: StackContext | None) -> list[str]:
    """No credential in plain text in an environment variable or config file: secrets only.

    A credential-named variable (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``AWS_SECRET_ACCESS_KEY``,
    ...) or a URL with an embedded password must be a Pulumi secret (encrypted in state, masked in
    output); in an ECS task it goes in ``secrets`` (valueFrom), never ``environment``, because the
    task definition is stored and shown in plain text. Values are never printed.
    """
    rule = "secrets-not-plaintext"
    out: list[str] = []
    for entry in env_entries(resource):
        if entry.secret or not isinstance(entry.value, str) or not entry.value or is_unknown(entry.value):
            continue
        if is_credential_name(entry.name):
            out.append(message(resource, rule, f"environment variable {entry.name} holds a credential in plain text; "
                                               "make the value a Pulumi secret (config --secret or "
                                               "pulumi.Output.secret)", context))
        elif _url_password(entry.value):
            out.append(message(resource, rule, f"environment variable {entry.name} holds a URL with a password in "
                                               "plain text; make the value a Pulumi secret", context))
    for f in config_files(resource):
        if f.secret:
            continue
        keys = list(dict.fromkeys(key for key, _ in credential_pairs(f.content)))
        if keys:
            out.append(message(resource, rule, f"config file {f.path} holds credential(s) in plain text "
                                               f"({', '.join(keys)}); make the file content a Pulumi secret or read "
                                               "the value from the environment (${ENV:...})", context))
    if resource.type == ECS_TASK_DEFINITION:
        for c in aws.container_definitions(resource) or []:
            for e in c.get("environment") or []:
                name = str(e.get("name", ""))
                if is_credential_name(name):
                    out.append(message(resource, rule, f"container {c.get('name')} passes {name} in environment; "
                                                       "credentials go in secrets (valueFrom Secrets Manager or SSM)",
                                       context))
    if resource.type in (RDS_INSTANCE, RDS_CLUSTER):
        for prop in ("password", "masterPassword"):
            value = resource.props.get(prop)
            if value is not None and not is_secret(value) and not is_unknown(value) and value != "":
                out.append(message(resource, rule, f"{prop} is set in plain text; use a Pulumi secret or "
                                                   "manage_master_user_password", context))
    return out


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("secrets-not-plaintext", "No credential in plain text in an environment variable or config file.",
              "resource", check_secrets_not_plaintext),
)
