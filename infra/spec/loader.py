"""Loads a ``PlatformSpec`` from a stack's config, with errors that name the key and what is allowed.

The stack config holds one structured object, ``lakehouse:platform``. Defaults (the chapter's lab
and ownership table) are merged under it, then the whole is validated by Pydantic. Any problem
becomes a ``ConfigError`` listing every bad key path; nothing is registered before that succeeds.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from infra.spec.layers import DEFAULT_CONTRACTS, LAYER_NAMES
from infra.spec.model import PlatformSpec

NAMESPACE = "lakehouse"
CONFIG_KEY = f"{NAMESPACE}:platform"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def state_root() -> Path:
    """Where stacks keep local state (native data dirs and logs, lab bind mounts).

    ``$LAKEHOUSE_STATE_DIR`` if set, else ``<project>/.state``, unless some parent of the
    project is closed to other users (a checkout under /root): natively PostgreSQL runs as its own
    system user and must reach its data directory, so the state then lives under /var/tmp.
    """
    import hashlib
    import os

    if os.environ.get("LAKEHOUSE_STATE_DIR"):
        return Path(os.environ["LAKEHOUSE_STATE_DIR"])
    if all(os.stat(p).st_mode & 0o001 for p in (PROJECT_ROOT, *PROJECT_ROOT.parents)):
        return PROJECT_ROOT / ".state"
    return Path("/var/tmp/lakehouse-platform") / hashlib.sha256(str(PROJECT_ROOT).encode()).hexdigest()[:12]

DEFAULT_IDENTITIES = {
    "lab": {
        "access_key": "lab-access-key",
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        "secret_config_key": "s3SecretKey",
    },
}


class ConfigError(Exception):
    """A stack config that does not describe a valid platform; ``errors`` holds one line per key."""

    def __init__(self, source: str, errors: list[str]):
        self.source = source
        self.errors = errors
        super().__init__(f"invalid platform config in {source}:\n" + "\n".join(f"  - {e}" for e in errors))


def defaults() -> dict[str, Any]:
    """The default platform: the chapter's seven contracts and its whole lab."""
    from infra.services import DEFAULT_SERVICES  # services import the model: import late

    return {
        "layers": copy.deepcopy(DEFAULT_CONTRACTS),
        "services": copy.deepcopy(DEFAULT_SERVICES),
        "identities": copy.deepcopy(DEFAULT_IDENTITIES),
    }


def _merge(base: Any, override: Any) -> Any:
    """Deep merge of mappings; anything else in ``override`` replaces ``base``."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base[key], value) if key in base else value
        return merged
    return copy.deepcopy(override)


def _precheck(raw: dict[str, Any]) -> list[str]:
    """Errors Pydantic would word poorly: unknown layers and services, null or non-mapping sections."""
    from infra.services import DEFAULT_SERVICES

    errors = []
    for section, allowed in (("layers", LAYER_NAMES), ("services", tuple(DEFAULT_SERVICES))):
        value = raw.get(section)
        if value is None:
            continue
        if not isinstance(value, dict):
            errors.append(f"{CONFIG_KEY}.{section}: must be a mapping of name -> settings")
            continue
        for name, body in value.items():
            if name not in allowed:
                kind = section[:-1]
                errors.append(f"{CONFIG_KEY}.{section}.{name}: unknown {kind} {name!r}; allowed: {', '.join(allowed)}")
            elif not isinstance(body, dict):
                errors.append(f"{CONFIG_KEY}.{section}.{name}: must be a mapping of settings, got {body!r}")
    return errors


def _carry_jobs(services_override: dict[str, Any]) -> dict[str, Any]:
    """A service's jobs follow its ``enabled`` unless the stack sets the job explicitly."""
    from infra.services import JOB_OF

    result = dict(services_override)
    for job, owner in JOB_OF.items():
        owner_enabled = services_override.get(owner, {}).get("enabled")
        if owner_enabled is not None and "enabled" not in services_override.get(job, {}):
            result[job] = {**services_override.get(job, {}), "enabled": owner_enabled}
    return result


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at the parent of an error location, found by walking the models."""
    model: Any = PlatformSpec
    for part in loc[:-1]:
        if isinstance(model, type) and issubclass(model, BaseModel):
            field = model.model_fields.get(str(part))
            if field is None:
                return []
            model = field.annotation
        else:
            # dict[K, V] / list[V] / Optional[X]: step into the value type
            args = [a for a in getattr(model, "__args__", ()) if a is not type(None)]
            model = args[-1] if args else None
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    args = [a for a in getattr(model, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)]
    return list(args[0].model_fields) if args else []


def _format(error: dict[str, Any]) -> str:
    loc = tuple(error["loc"])
    path = ".".join([CONFIG_KEY, *(str(p) for p in loc)])
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        allowed = _allowed_keys(loc)
        message = f"unknown key; allowed: {', '.join(allowed)}" if allowed else "unknown key"
    elif error["type"] == "missing":
        message = "required but missing"
    elif error["type"] == "enum":
        message = f"{error['input']!r} is not allowed; {message.lower()}"
    elif error["type"] in ("less_than_equal", "greater_than_equal", "less_than", "greater_than", "int_parsing",
                           "int_type", "bool_parsing", "string_type", "dict_type", "list_type"):
        message = f"{error['input']!r} is not allowed; {message[0].lower()}{message[1:]}"
    elif error["type"] == "literal_error":
        message = f"{error['input']!r} is not allowed; {message.lower()}"
    if not loc and ": " in message:
        # Cross-field (model-level) errors carry their own key path: "services.x.y: what is wrong".
        key, rest = message.split(": ", 1)
        return f"{CONFIG_KEY}.{key}: {rest}"
    return f"{path}: {message}"


def load_platform(raw: dict[str, Any] | None, *, source: str = "stack config") -> PlatformSpec:
    """Validate one stack's ``lakehouse:platform`` object merged over the defaults."""
    if raw is None:
        raise ConfigError(source, [f"{CONFIG_KEY}: missing; the stack must set at least {CONFIG_KEY}.target"])
    if not isinstance(raw, dict):
        raise ConfigError(source, [f"{CONFIG_KEY}: must be a mapping, got {type(raw).__name__}"])
    errors = _precheck(raw)
    if errors:
        raise ConfigError(source, errors)
    override = dict(raw)
    if "services" in override:
        override["services"] = _carry_jobs(override["services"])
    merged = _merge(defaults(), override)
    try:
        return PlatformSpec.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(source, [_format(e) for e in exc.errors()]) from None


def stack_file(stack: str, root: Path = PROJECT_ROOT) -> Path:
    """Path of a stack's config file."""
    return root / f"Pulumi.{stack}.yaml"


def read_stack_config(path: Path) -> dict[str, Any]:
    """The ``config`` mapping of a stack file."""
    if not path.exists():
        raise ConfigError(str(path), [f"{path.name}: no such stack file"])
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(path.name, [f"{path.name}: not valid YAML: {exc}"]) from None
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(path.name, [f"{path.name}: 'config' must be a mapping"])
    return config


def load_stack(stack: str, root: Path = PROJECT_ROOT) -> PlatformSpec:
    """Load and validate a stack from its file, without Pulumi (used by review and tests)."""
    path = stack_file(stack, root)
    return load_platform(read_stack_config(path).get(CONFIG_KEY), source=path.name)
