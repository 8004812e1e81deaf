"""Loads a ``PlatformSpec`` from a stack's config, with errors that name the key and what is allowed.

The stack config holds one structured object, ``lakehouse:platform``. Defaults (the chapter's lab
from the service registry, and the ownership table) are merged under it, then the whole is
validated by Pydantic with the registry's placement as context. Any problem becomes a
``ConfigError`` listing every bad key path; nothing is registered before that succeeds.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from lakehouse_platform.labels import LAYER_NAMES
from lakehouse_platform.model import DEFAULT_CONTRACTS, PlacementContext, PlatformSpec
from lakehouse_platform.paths import project_root
from lakehouse_platform.services.capabilities import Capability
from lakehouse_platform.services.registry import registry

NAMESPACE = "lakehouse"
CONFIG_KEY = f"{NAMESPACE}:platform"
#: A stack whose file names another stack here takes that stack's ``lakehouse:platform`` and changes only what it
#: sets itself (``Pulumi.lab-offline.yaml``: the lab with built images, without Polaris and Lakekeeper).
EXTENDS_KEY = f"{NAMESPACE}:extends"
_STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

# One identity per use (governance): the platform's admin for the platform itself, a writer for engines
# that write, a read-only one for readers. The platform keeps the lab's historical access key.
DEFAULT_IDENTITIES = {
    "platform": {
        "access_key": "lab-access-key",
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        "secret_config_key": "s3SecretKey",
    },
    "writer": {
        "access_key": "writer-access-key",
        "actions": ["Read", "Write", "List"],
        "secret_config_key": "s3WriterSecretKey",
    },
    "reader": {
        "access_key": "reader-access-key",
        "actions": ["Read", "List"],
        "secret_config_key": "s3ReaderSecretKey",
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
    return {
        "layers": copy.deepcopy(DEFAULT_CONTRACTS),
        "services": copy.deepcopy(registry().defaults()),
        "identities": copy.deepcopy(DEFAULT_IDENTITIES),
        # The chapter's first catalog (the REST fixture): the first catalog of the registry.
        "catalog": {"default": next(iter(registry().catalogs()), "")},
    }


def placement_context() -> PlacementContext:
    """What the registry tells validation: where services cannot run, which are jobs, which are catalogs."""
    reg = registry()
    secret_keys = {item.config_key: d.name for d in reg for item in d.governance.secrets if item.config_key}
    identity_secrets = {kind: (item.config_key, item.what) for kind, (_, item) in reg.identity_secrets().items()}
    return PlacementContext(unavailable=reg.placement(), job_of=reg.jobs_of(), catalogs=tuple(reg.catalogs()),
                            checks=reg.checks(), gates=reg.gates(), secret_keys=secret_keys,
                            identity_secrets=identity_secrets)


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
    errors = []
    for section, allowed in (("layers", LAYER_NAMES), ("services", registry().names())):
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
    result = dict(services_override)
    for job, owner in registry().jobs_of().items():
        owner_enabled = services_override.get(owner, {}).get("enabled")
        if owner_enabled is not None and "enabled" not in services_override.get(job, {}):
            result[job] = {**services_override.get(job, {}), "enabled": owner_enabled}
    return result


def _conditional_dependencies(services: dict[str, Any]) -> dict[str, Any]:
    """``depends_on`` plus what each definition waits for only where the stack enables it.

    A definition's ``after`` (e.g. a catalog's setup job waits for the lab's bucket job, which aws
    does not run) and, for a service that ``uses_catalogs``, every enabled catalog's
    ``ready_after`` jobs. Added before validation, so the start order, every target and the review
    see them as ordinary, strict dependencies.
    """
    def enabled(name: str) -> bool:
        body = services.get(name)
        return isinstance(body, dict) and body.get("enabled", True) is not False

    reg = registry()
    ready = [job for name, d in reg.catalogs().items() if enabled(name)
             for job in (d.catalog.ready_after if d.catalog else ())]
    result = dict(services)
    for definition in reg:
        after = [n for item in definition.after
                 for n in (reg.providers(item) if isinstance(item, Capability) else (item,))]
        wanted = after + (ready if definition.uses_catalogs else [])
        body = result.get(definition.name)
        if not wanted or not isinstance(body, dict):
            continue
        current = body.get("depends_on") or []
        if not isinstance(current, list):
            continue  # not a list: validation reports it as the user wrote it
        extra = [n for n in dict.fromkeys(wanted) if enabled(n) and n not in current and n != definition.name]
        if extra:
            result[definition.name] = {**body, "depends_on": current + extra}
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


def _format(error: Any) -> list[str]:
    from lakehouse_platform.model.streams import CONNECTOR_KINDS

    # A tagged union puts the tag in the location (connectors.0.iceberg-sink.table): the user wrote connectors.0.table.
    loc = tuple(p for i, p in enumerate(error["loc"])
                if not (p in CONNECTOR_KINDS and i and isinstance(error["loc"][i - 1], int)))
    if loc and loc[-1] == "[key]":
        # A mapping key that is not a name (ports: {8080: ...}, env: {true: x}): say so at the mapping.
        path = ".".join([CONFIG_KEY, *(str(p) for p in loc[:-2])])
        return [f"{path}: the key {error['input']!r} is not a name; keys are strings (quote it: '{error['input']}')"]
    path = ".".join([CONFIG_KEY, *(str(p) for p in loc)])
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] in ("model_type", "model_attributes_type"):
        message = f"must be a mapping of settings, got {error['input']!r}"
    elif error["type"] == "too_short":
        message = f"{error['input']!r} is not allowed: list at least {error['ctx']['min_length']}"
    elif error["type"] == "extra_forbidden":
        allowed = _allowed_keys(loc)
        message = f"unknown key; allowed: {', '.join(allowed)}" if allowed else "unknown key"
    elif error["type"] == "missing":
        message = "required but missing"
    elif error["type"] == "union_tag_invalid":
        message = f"{error['ctx']['tag']!r} is not allowed; allowed: {error['ctx']['expected_tags']}"
    elif error["type"] == "union_tag_not_found":
        message = f"needs {error['ctx']['discriminator']}"
    elif error["type"] in ("enum", "literal_error", "less_than_equal", "greater_than_equal", "less_than",
                           "greater_than", "int_parsing", "int_type", "int_from_float", "float_parsing", "float_type",
                           "bool_parsing", "bool_type", "string_type", "dict_type", "list_type", "too_long",
                           "string_too_short", "string_too_long"):
        # Only the first letter is lowered: the allowed values keep their case ('Read', not 'read').
        message = f"{error['input']!r} is not allowed; {message[0].lower()}{message[1:]}"
    elif error["type"] == "value_error" and "email" in message.lower():
        message = f"{error['input']!r} is not an email address ({message})"
    if loc and error["type"] == "value_error":
        # A nested model's cross-field error names a path below it ("connectors.1.name: ..."): join the two.
        head, sep, rest = message.partition(": ")
        if sep and "\n" not in message and " " not in head and head.split(".", 1)[0] in _allowed_keys((*loc, "x")):
            return [f"{path}.{head}: {rest}"]
    if not loc:
        # Cross-field (model-level) errors carry their own key path, one per line: "services.x.y: what is wrong".
        lines = []
        for line in message.splitlines():
            key, sep, rest = line.partition(": ")
            lines.append(f"{CONFIG_KEY}.{key}: {rest}" if sep else f"{CONFIG_KEY}: {line}")
        return lines
    return [f"{path}: {message}"]


def _shift_published_ports(merged: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The lab's every published port moved by ``lab.published_port_offset`` (docker only; the model refuses it
    elsewhere); errors name the offset and the port it would move past 65535."""
    lab = merged.get("lab")
    offset = lab.get("published_port_offset") if isinstance(lab, dict) else None
    if merged.get("target") != "docker" or type(offset) is not int or offset <= 0:
        return merged, []  # not the lab, no offset, or one the model reports as it is wrong
    services, errors, highest = {}, [], 0
    for name, body in (merged.get("services") or {}).items():
        ports = body.get("ports") if isinstance(body, dict) else None
        if not isinstance(ports, dict):
            services[name] = body
            continue
        moved = {}
        for port_name, port in ports.items():
            external = port.get("external") if isinstance(port, dict) else None
            if type(external) is not int:
                moved[port_name] = port
                continue
            highest = max(highest, external)
            moved[port_name] = {**port, "external": external + offset}
            if external + offset > 65535:
                key = f"services.{name}.ports.{port_name}.external"
                errors.append(f"{CONFIG_KEY}.lab.published_port_offset: {offset} moves {key} {external} to "
                              f"{external + offset}, past 65535")
        services[name] = {**body, "ports": moved}
    if errors:
        return merged, [*errors[:1], f"{CONFIG_KEY}.lab.published_port_offset: allowed: 0 to {65535 - highest} "
                                     f"(the highest published port is {highest})"]
    return {**merged, "services": services}, []


def extended(raw: Any, base: Any, root: Path | None = None, *, source: str = "stack config") -> Any:
    """A stack's ``lakehouse:platform`` over that of the stack its ``lakehouse:extends`` names (mappings merged,
    anything else replaced), or ``raw`` itself where it names none. One level: the base extends nothing. The base's
    file is beside the stack's, in ``root`` (default: the Pulumi project being run)."""
    if base is None:
        return raw
    root = root if root is not None else project_root()
    if not isinstance(base, str) or not _STACK_NAME.match(base):
        raise ConfigError(source, [f"{EXTENDS_KEY}: {base!r} is not a stack name (e.g. lab: Pulumi.lab.yaml)"])
    path = stack_file(base, root)
    if not path.exists():
        stacks = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))
        raise ConfigError(source, [f"{EXTENDS_KEY}: no stack file {path.name}; allowed: {', '.join(stacks)}"])
    config = read_stack_config(path)
    if config.get(EXTENDS_KEY) is not None:
        raise ConfigError(source, [f"{EXTENDS_KEY}: {base} extends {config[EXTENDS_KEY]} itself; name a stack that "
                                   "extends none"])
    underneath = config.get(CONFIG_KEY)
    if not isinstance(underneath, dict):
        raise ConfigError(source, [f"{EXTENDS_KEY}: {path.name} has no {CONFIG_KEY} mapping to extend"])
    if raw is None:
        return copy.deepcopy(underneath)
    return _merge(underneath, raw) if isinstance(raw, dict) else raw  # not a mapping: load_platform says so


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
    merged["services"] = _conditional_dependencies(merged["services"])
    merged, errors = _shift_published_ports(merged)
    if errors:
        raise ConfigError(source, errors)
    try:
        return PlatformSpec.model_validate(merged, context=placement_context())
    except ValidationError as exc:
        raise ConfigError(source, [line for e in exc.errors() for line in _format(e)]) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping (the last would silently win)."""


def target_defaults(target: str) -> PlatformSpec:
    """The registry's default platform on ``target``, every service that cannot run there disabled (as that target's
    stack files do): what probes and tools use where no stack file is at hand."""
    jobs = registry().jobs_of()
    off = {name: {"enabled": False} for name, where in registry().placement().items()
           if target in {t.value for t in where} and name not in jobs}
    return load_platform({"target": target, "services": off}, source=f"the defaults on {target}")


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            # `? [a, b]` or `? {a: b}`: a key that is a list or mapping, which no config key can be (and Python
            # could not hash).
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark,
                f"a key is a {kind}; every key of a stack config is a name (a plain string)", key_node.start_mark)
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark,
                f"key {key!r} appears twice (first on line {seen[key] + 1}); Pulumi refuses duplicate keys too",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def stack_file(stack: str, root: Path | None = None) -> Path:
    """Path of a stack's config file in ``root`` (default: the Pulumi project being run, ``project_root``)."""
    return (root if root is not None else project_root()) / f"Pulumi.{stack}.yaml"


def read_stack_config(path: Path) -> dict[str, Any]:
    """The ``config`` mapping of a stack file (duplicate keys refused, like Pulumi's own parser)."""
    if not path.exists():
        raise ConfigError(str(path), [f"{path.name}: no such stack file"])
    return parse_stack_config(path.read_bytes(), path.name)


def parse_stack_config(raw: bytes, name: str) -> dict[str, Any]:
    """The ``config`` mapping of a stack file's bytes (a file, or a revision of it from git); ``name`` is what
    errors call it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(name, [
            f"{name}: line {line}, column {column}: byte 0x{raw[exc.start]:02x} is not UTF-8 (a Latin-1 or "
            "Windows-1252 character?); Pulumi reads stack files as UTF-8: save the file as UTF-8"]) from None
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader) or {}  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(name, [f"{name}: not valid YAML: {exc}"]) from None
    if not isinstance(document, dict):
        raise ConfigError(name, [f"{name}: a stack file is a mapping with a 'config' key"])
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(name, [f"{name}: 'config' must be a mapping"])
    return config


def stack_platform(stack: str, root: Path | None = None) -> Any:
    """A stack file's ``lakehouse:platform`` as the program sees it: over its ``lakehouse:extends`` stack's."""
    path = stack_file(stack, root)
    config = read_stack_config(path)
    return extended(config.get(CONFIG_KEY), config.get(EXTENDS_KEY), path.parent, source=path.name)


def load_stack(stack: str, root: Path | None = None) -> PlatformSpec:
    """Load and validate a stack from its file, without Pulumi (the review, the commands; ``root``: the project)."""
    return load_platform(stack_platform(stack, root), source=stack_file(stack, root).name)
