"""What a refusal looks like, whichever layer refused (the store's 403, the catalog gate's 401/403, Trino's access
control): the governance probes count only an error that says it is a refusal; any other failure proves nothing."""

from __future__ import annotations

#: What a refusal says, whichever layer refused (store 403, catalog gate 401/403, Trino's access control).
REFUSAL = ("AccessDenied", "Access Denied", "ACCESS_DENIED", "ForbiddenException", "NotAuthorized", "Forbidden",
           "PERMISSION_DENIED", "Unauthorized", "Invalid credentials", "403", "401")


def describe(exc: BaseException) -> str:
    """The whole story of an error: its message, and for Trino the cause chain of the failed query."""
    text = str(exc)
    failure = getattr(exc, "failure_info", None)
    if failure:
        causes, cause = [], failure
        while isinstance(cause, dict):
            causes.append(f"{cause.get('type')}: {cause.get('message')}")
            cause = cause.get("cause")
        text += " | caused by: " + " <- ".join(causes)
    return " ".join(text.split())


def short(exc: BaseException) -> str:
    text = describe(exc)
    for marker in REFUSAL:
        at = text.find(marker)
        if at >= 0:
            return f"{type(exc).__name__}: ...{text[max(0, at - 80):at + 160]}"
    return f"{type(exc).__name__}: {text[:240]}"
