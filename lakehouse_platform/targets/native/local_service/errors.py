"""What goes wrong with a local service: errors meant for the operator, and a health check not passed yet."""

from __future__ import annotations


class LocalServiceError(Exception):
    """A service could not be started, checked or stopped; the message is meant for the operator."""


class HealthPending(Exception):
    """One health probe failed; the service may still become healthy (retried)."""


class ServiceExited(LocalServiceError):
    """The service process died while we were waiting for it to become healthy (not retried)."""
