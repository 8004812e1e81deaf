"""The native target's LocalService (a Python dynamic resource) as the rules read it: env and files."""

from __future__ import annotations

from collections.abc import Mapping

from lakehouse_platform.policies.adapters.common import ConfigFile, EnvEntry
from lakehouse_platform.policies.resources import Resource
from lakehouse_platform.policies.wire import is_secret, is_unknown, outer, reveal


def env_entries(resource: Resource) -> list[EnvEntry]:
    """``env`` (name -> value) with each entry's secrecy."""
    entries: list[EnvEntry] = []
    raw, whole_secret = outer(resource.props.get("env"))
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            alone = is_secret(value)
            entries.append(EnvEntry(str(name), reveal(value), whole_secret or alone, alone))
    return entries


def config_files(resource: Resource) -> list[ConfigFile]:
    """``files`` (path -> content) the service gets written, with their secrecy."""
    files: list[ConfigFile] = []
    raw, whole_secret = outer(resource.props.get("files"))
    if isinstance(raw, Mapping):
        for path, content in raw.items():
            secret = whole_secret or is_secret(content)
            content = reveal(content)
            if isinstance(content, str) and not is_unknown(content):
                files.append(ConfigFile(str(path), content, secret))
    return files
