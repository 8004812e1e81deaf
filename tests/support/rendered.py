"""What a program run rendered, read back: secrets unwrapped from Pulumi's wire form, a container's uploads and
variables, a properties file, a native service by name."""

from __future__ import annotations

from typing import Any

from lakehouse_platform.policies import wire
from tests.support.harness import ProgramRun, Registered

LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"


#: ``value`` with every secret in it, at any depth, unwrapped; whether a value is a secret in the wire form.
reveal, is_secret = wire.reveal, wire.is_secret


def secret_value(value: Any) -> Any:
    """The value inside a Pulumi secret; fails if ``value`` is not one."""
    assert is_secret(value), f"not a secret: {value!r}"
    return value["value"]


def plain(value: Any) -> Any:
    """The value inside a Pulumi secret, or ``value`` itself when it is not one."""
    return wire.outer(value)[0]


def properties(text: str) -> dict[str, str]:
    """A Java properties file's ``key=value`` lines (comments and blank lines skipped)."""
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def envs(resource: Registered) -> dict[str, str]:
    """A docker container's ``envs`` (``NAME=value`` entries) as a mapping."""
    return dict(e.split("=", 1) for e in plain(resource.inputs["envs"]))


def uploads(run: ProgramRun, name: str) -> dict[str, str]:
    """The files uploaded into the container named ``name``: path to content (or source)."""
    return {u["file"]: u.get("content") or u.get("source") for u in reveal(run.named(name).inputs["uploads"])}


def local_service(run: ProgramRun, name: str) -> Registered:
    """The native target's LocalService named ``name``."""
    return next(r for r in run.of_type(LOCAL_SERVICE) if r.name == name)
