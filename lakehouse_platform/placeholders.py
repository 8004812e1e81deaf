"""Placeholders in rendered plans: secrets, values derived from secrets, and values only a target knows.

Plans stay plain strings; each target swaps the placeholders for Pulumi secrets or resource outputs, so a
rendered value that holds a secret is itself a secret in state and outputs.
"""

from __future__ import annotations

import re


def secret(name: str) -> str:
    """A placeholder for a named secret inside a command, environment value or file.

    Plans stay plain strings; the target swaps placeholders for Pulumi secrets, so the rendered
    value is itself a secret in state and outputs.
    """
    return "${secret:" + name + "}"


SECRET_TOKEN = re.compile(r"\$\{secret:([a-z0-9-]+)\}")
#: A value derived from a named secret, never the secret itself: ``${sha256:name}`` (hex digest, what a
#: gate compares tokens against) or ``${pbkdf2:name}`` (a salted PBKDF2 hash, what Trino's password file
#: holds). Rendered like secrets (the result is still a Pulumi secret), and deterministic, so an
#: unchanged secret renders the same file and restarts nothing.
DERIVED_TOKEN = re.compile(r"\$\{(sha256|pbkdf2):([a-z0-9-]+)\}")


def sha256_of(name: str) -> str:
    """A placeholder for the sha256 hex digest of a named secret."""
    return "${sha256:" + name + "}"


def pbkdf2_of(name: str) -> str:
    """A placeholder for the PBKDF2 hash of a named secret, in Trino's password-file form."""
    return "${pbkdf2:" + name + "}"

#: Values only the aws target knows once its resources exist (ARNs), by name.
VENDING_ROLE_ARN = "vending-role-arn"  # the catalogs' credential-vending role
KMS_KEY_ARN = "kms-key-arn"  # the platform's customer-managed key (the warehouse's SSE-KMS key)
PLATFORM_TOKEN = re.compile(r"\$\{platform:([a-z0-9-]+)\}")


def platform_value(name: str) -> str:
    """A placeholder for a value the target fills once it exists (``VENDING_ROLE_ARN``, ``KMS_KEY_ARN``).

    An ECS plan's environment may hold one; the aws target swaps it for the resource's output.
    """
    return "${platform:" + name + "}"
