"""The docker target's resources as the rules read them: environment, uploads, mounts, health checks, jobs."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from lakehouse_platform.policies.adapters.common import ConfigFile, EnvEntry
from lakehouse_platform.policies.resources import Resource
from lakehouse_platform.policies.wire import is_secret, is_unknown, outer, reveal, truthy


def _split_env(entry: str) -> tuple[str, str]:
    name, _, value = entry.partition("=")
    return name, value


def env_entries(resource: Resource) -> list[EnvEntry]:
    """``envs`` (``NAME=value`` strings) with each entry's secrecy."""
    entries: list[EnvEntry] = []
    raw, whole_secret = outer(resource.props.get("envs"))
    if isinstance(raw, list):
        for item in raw:
            alone = is_secret(item)
            text = reveal(item)
            if isinstance(text, str) and not is_unknown(text):
                name, value = _split_env(text)
                entries.append(EnvEntry(name, value, whole_secret or alone, alone))
    return entries


def config_files(resource: Resource) -> list[ConfigFile]:
    """Files uploaded into the container (``uploads``), with their secrecy."""
    files: list[ConfigFile] = []
    raw, whole_secret = outer(resource.props.get("uploads"))
    if isinstance(raw, list):
        for item in raw:
            secret = whole_secret or is_secret(item)
            item = reveal(item) if is_secret(item) else item
            if not isinstance(item, Mapping):
                continue
            content = item.get("content")
            secret = secret or is_secret(content)
            content = reveal(content)
            if isinstance(content, str) and not is_unknown(content):
                files.append(ConfigFile(str(reveal(item.get("file"))), content, secret))
    return files


def is_job(resource: Resource) -> bool:
    """A container that runs once to completion (the docker target's jobs) rather than a server."""
    props = resource.props
    return (truthy(props.get("attach")) is True or reveal(props.get("restart")) == "no"
            or truthy(props.get("mustRun")) is False)


def mount_targets(resource: Resource) -> list[tuple[str, str, str]]:
    """(type, source, target) of every mount and volume of a container."""
    mounts = []
    for m in reveal(resource.props.get("mounts")) or []:
        if isinstance(m, Mapping):
            mounts.append((str(m.get("type") or "volume"), str(m.get("source") or ""), str(m.get("target") or "")))
    for v in reveal(resource.props.get("volumes")) or []:
        if isinstance(v, Mapping):
            kind = "bind" if v.get("hostPath") else "volume"
            source = str(v.get("hostPath") or v.get("volumeName") or "")
            mounts.append((kind, source, str(v.get("containerPath") or "")))
    return mounts


def covering_mount(resource: Resource, path: str) -> tuple[str, str, str] | None:
    """The mount that holds ``path`` (the deepest whose target is the path or one of its parents)."""
    path = posixpath.normpath(path)
    best = None
    for mount in mount_targets(resource):
        target = posixpath.normpath(mount[2]) if mount[2] else ""
        covers = bool(target) and (path == target or path.startswith(target.rstrip("/") + "/"))
        if covers and (best is None or len(target) > len(best[2])):
            best = mount
    return best


def healthcheck_tests(value: Any) -> list[str] | None:
    """The ``tests`` of a container's ``healthcheck`` (``["unknown"]`` while unknown)."""
    value = reveal(value)
    if not isinstance(value, Mapping):
        return None
    tests = value.get("tests")
    if is_unknown(tests):
        return ["unknown"]
    return [str(t) for t in tests] if isinstance(tests, list) else None


def command_text(resource: Resource) -> str:
    """The container's command as one string (for reading, secrets revealed)."""
    return " ".join(str(a) for a in reveal(resource.props.get("command")) or [])
