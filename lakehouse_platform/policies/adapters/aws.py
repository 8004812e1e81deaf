"""The aws target's resources as the rules read them: container definitions, files embedded in commands, links."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lakehouse_platform.policies.adapters.common import ConfigFile
from lakehouse_platform.policies.resources import Resource, service_label
from lakehouse_platform.policies.wire import is_unknown, reveal

# Fargate has no host files: the aws target writes config files from the container command
# (`echo <base64> | base64 -d > <path>`, lakehouse_platform.components.aws.ecs.files_then_exec).
EMBEDDED_FILE_RE = re.compile(r"echo\s+([A-Za-z0-9+/=]+)\s*\|\s*base64\s+-d\s*>\s*('[^']*'|\"[^\"]*\"|\S+)")


def container_definitions(resource: Resource) -> list[dict[str, Any]] | None:
    """The containers of an ECS task definition (None while unknown)."""
    raw = reveal(resource.props.get("containerDefinitions"))
    if raw is None or is_unknown(raw):
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return [dict(c) for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else None


def embedded_files(command: str) -> list[ConfigFile]:
    """Config files a shell command writes from base64 (task definitions are stored in plain text)."""
    files = []
    for encoded, path in EMBEDDED_FILE_RE.findall(command):
        try:
            content = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        files.append(ConfigFile(path.strip("'\""), content, False))
    return files


def config_files(resource: Resource) -> list[ConfigFile]:
    """Files the containers of a task definition write from their command or entry point."""
    files: list[ConfigFile] = []
    for c in container_definitions(resource) or []:
        for arg in list(c.get("command") or []) + list(c.get("entryPoint") or []):
            files.extend(embedded_files(str(arg)))
    return files


def refers_to(value: str, keys: set[str]) -> bool:
    """Whether a reference (a name, a family, an ARN such as ...:task-definition/<family>:<rev>) names one of keys."""
    return any(value == key or value.endswith((":" + key, "/" + key)) or f"/{key}:" in value for key in keys)


def task_keys(td: Resource) -> set[str]:
    """Everything an ECS service may name its task definition by: name, family, ARN, id."""
    family = reveal(td.props.get("family"))
    keys = {td.name}
    for value in (family, reveal(td.props.get("arn")), td.id):
        if isinstance(value, str) and not is_unknown(value):
            keys.add(value)
    return keys


def linked(service: Resource, candidates: Sequence[Resource], prop: str,
           keys: Callable[[Resource], set[str]]) -> list[Resource]:
    """Resources a service refers to through ``prop``: by dependency, by value, else by service tag."""
    if service.deps.get(prop):
        found = [c for c in candidates if c.urn in service.deps[prop]]
        if found:
            return found
    values = reveal(service.props.get(prop))
    values = values if isinstance(values, list) else [values]
    wanted = [v for v in values if isinstance(v, str) and v and not is_unknown(v)]
    found = [c for c in candidates if any(refers_to(v, keys(c)) for v in wanted)]
    if found:
        return found
    tag = service_label(service)
    return [c for c in candidates if tag and service_label(c) == tag]
