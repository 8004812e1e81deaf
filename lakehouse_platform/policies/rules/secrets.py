"""Secrets: no credential in plain text, whether recognised by its name or by its value."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from lakehouse_platform.policies.adapters import aws, config_files, env_entries
from lakehouse_platform.policies.resources import (
    DOCKER_CONTAINER,
    ECS_TASK_DEFINITION,
    RDS_CLUSTER,
    RDS_INSTANCE,
    PolicyDef,
    Resource,
    StackContext,
    describe,
    index_of,
    is_dynamic,
    message,
)
from lakehouse_platform.policies.wire import is_secret, is_unknown, join_path, plain_strings, secret_values

# An environment variable whose name says it holds a credential (POSTGRES_PASSWORD, S3_SECRET_KEY,
# AWS_SECRET_ACCESS_KEY, POLARIS_ROOT_SECRET, LAKEKEEPER__PG_ENCRYPTION_KEY, ...). *_FILE names a path.
CREDENTIAL_ENV_RE = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|ENCRYPTION_KEY|API_KEY)",
                               re.IGNORECASE)
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
# Shorter secrets are not searched for in other values: they would match ordinary text.
MIN_SECRET_LENGTH = 8


def is_credential_name(name: str) -> bool:
    """An environment variable name that says it holds a credential (``*_FILE`` names a path)."""
    return bool(CREDENTIAL_ENV_RE.search(name)) and not name.upper().endswith("_FILE")


def is_switch(value: Any) -> bool:
    """A boolean setting: no credential, whatever its name says (LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS=true)."""
    return isinstance(value, str) and value.strip().lower() in ("true", "false")


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


# ---- by name --------------------------------------------------------------------------------


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
        if is_credential_name(entry.name) and not is_switch(entry.value):
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
                if is_credential_name(name) and not is_switch(e.get("value")):
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


# ---- by value -------------------------------------------------------------------------------

# Inputs read entry by entry (a secret environment or file set taints every entry; only the
# credentials among them are secrets worth searching for).
_STRUCTURED = {DOCKER_CONTAINER: ("envs", "uploads"), "dynamic": ("env", "files")}


def _structured(resource: Resource, prop: str) -> bool:
    key = "dynamic" if is_dynamic(resource.type) else resource.type
    return prop in _STRUCTURED.get(key, ())


def is_public_certificate(value: str) -> bool:
    """A PEM of certificates alone: public (a service's trust store gets it among its secrets; the stack outputs it
    plainly), unlike a private key."""
    text = value.strip()
    return text.startswith("-----BEGIN CERTIFICATE-----") and "PRIVATE KEY" not in text


def known_secrets(resources: Sequence[Resource], context: StackContext | None) -> dict[str, str]:
    """value -> where it is a secret (a config key, or a variable, key or input of a resource).

    The stack's secret config values (when the engine handed them to the pack); then every value a
    resource input holds as a Pulumi secret: a secret string input, a secret environment entry that
    is a secret by itself or by its credential name, the password of a URL in a secret entry, a
    credential in a secret config file. A value held in several places is named after the first of
    them in that order, then by resource kind and name (the engine's resource order varies).
    """
    candidates: list[tuple[int, str, str, str]] = []  # (rank, resource, value, source)

    def add(rank: int, where: str, value: Any, source: str) -> None:
        if (isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH and not is_unknown(value)
                and not REFERENCE_RE.search(value) and not is_public_certificate(value)):
            candidates.append((rank, where, value, source))

    if context is not None:
        for key in sorted(context.secrets):
            add(0, "", context.secrets[key], f"the stack's secret config {key}")
    for r in resources:
        where = describe(r)
        for prop, raw in r.props.items():
            if not _structured(r, prop):
                for path, value in secret_values(raw, join_path("", prop)):
                    add(1, where, value, f"secret input {path} of {where}")
        for entry in env_entries(r):
            if not entry.secret or not isinstance(entry.value, str):
                continue
            if entry.alone or is_credential_name(entry.name):
                add(2, where, entry.value, f"secret {entry.name} of {where}")
            password = _url_password(entry.value)
            if password:
                add(3, where, password, f"the password in {entry.name} of {where}")
        for f in config_files(r):
            if f.secret:
                for key, value in credential_pairs(f.content):
                    add(4, where, value, f"secret {key} of {f.path} in {where}")
    found: dict[str, str] = {}
    for _, _, value, source in sorted(candidates):
        found.setdefault(value, source)
    return found


def _texts(path: str, text: str) -> Iterator[tuple[str, str]]:
    """(path, text) of a plain string, of the strings of a JSON document in it, of the files a command writes."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, (list, dict)):
            for inner_path, inner in plain_strings(document, path):
                yield from _texts(inner_path, inner)
            return
    yield path, text
    for f in aws.embedded_files(text):
        yield f"{path} (file {f.path})", f.content


def _where(resource: Resource, path: str, text: str) -> str:
    """A path for messages; a docker env entry also says its variable's name."""
    if resource.type == DOCKER_CONTAINER and re.fullmatch(r"envs\[\d+\]", path) and "=" in text:
        return f"{path} ({text.partition('=')[0]})"
    return path


def check_secret_values_not_plaintext(resources: Sequence[Resource], context: StackContext | None) -> list[str]:
    """No secret's value appears in plain text in any resource input, whatever the input is called.

    Every value the stack knows as a secret (its secret config; every value some resource input
    holds as a Pulumi secret) is searched for in every plain string of every resource input:
    environment entries, files, commands, JSON documents such as ECS container definitions, and
    the files a command writes from base64. A copy in plain text is stored unencrypted in the
    state and shown in previews, whatever it is called (``STORE_AUTH``). Messages name the
    resource, the property path and the secret's name, never its value.
    """
    rule = "secret-values-not-plaintext"
    secrets = known_secrets(resources, context)
    if not secrets:
        return []
    index = index_of(resources)
    out: list[str] = []
    for r in resources:
        seen: set[tuple[str, str]] = set()
        for prop_path, raw_text in plain_strings(r.props):
            for path, text in _texts(prop_path, raw_text):
                for value, source in secrets.items():
                    if value not in text:
                        continue
                    where = _where(r, path, text)
                    if (where, source) in seen:
                        continue
                    seen.add((where, source))
                    out.append(message(r, rule, f"{where} holds the value of {source} in plain text; make "
                                                "the input a Pulumi secret (pulumi.Output.secret) or pass a "
                                                "reference to the secret, never its value", context, index))
    return out


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("secrets-not-plaintext", "No credential in plain text in an environment variable or config file.",
              "resource", check_secrets_not_plaintext),
    PolicyDef("secret-values-not-plaintext", "No secret's value appears in plain text in any resource input.",
              "stack", check_secret_values_not_plaintext),
)
