"""What every provider's adapter yields: environment entries and config files, with their secrecy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class EnvEntry:
    """One environment variable of a container or local service.

    ``secret``: the value is a Pulumi secret (by itself, or because the whole environment is);
    ``alone``: the value is wrapped as a secret by itself, not only as part of a secret environment.
    """

    name: str
    value: Any  # str, or an unknown sentinel
    secret: bool
    alone: bool = False


@dataclass
class ConfigFile:
    """A file a resource writes (docker uploads, native files, files embedded in an ECS command)."""

    path: str
    content: str
    secret: bool
