"""Credentials (governance): on aws, engines get short-lived credentials from the catalog, never static keys."""

from __future__ import annotations

from policies.adapters import aws, config_files
from policies.resources import (
    ECS_TASK_DEFINITION,
    IAM_ACCESS_KEY,
    PolicyDef,
    Resource,
    StackContext,
    message,
)
from policies.wire import is_unknown, reveal, strings

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


POLICIES: tuple[PolicyDef, ...] = (
    PolicyDef("governance-vended-credentials", "On aws, engines get credentials from the catalog's vending role, "
              "never static keys.", "resource", check_vended_credentials),
)
