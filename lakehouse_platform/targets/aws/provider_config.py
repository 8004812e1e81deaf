"""The stack's ``aws:`` configuration, handed whole to the explicit AWS provider the program uses.

Pulumi applies a stack's ``aws:`` keys (``aws:profile``, ``aws:assumeRoles``, ``aws:endpoints``, ...) to
its *default* AWS provider only; this program creates an explicit provider (its region and default tags
come from the spec), so without this module a team's ``pulumi config set aws:...`` would never reach it,
and a CD pipeline assuming a deployment role through ``aws:assumeRoles`` would deploy as the runner's own
identity. Every key of the namespace is read here and passed on under its provider argument; a key the
provider does not have (a typo such as ``aws:assumeRole``) stops the run, naming it and what is allowed.

The keys and their types are the provider's own (``pulumi_aws.ProviderArgs``): a key is the camelCase of
an argument, strings pass as they are, booleans and integers are parsed, lists and objects are JSON (as
``pulumi config set --path`` writes them) and go to the provider in that camelCase form, which is its wire
form. A secret stays a secret. Two keys meet the spec: ``aws:region`` must equal ``aws.region`` of
``lakehouse:platform`` (which places every resource), and ``aws:defaultTags`` is merged with the
platform's own default tags, which it may not change.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws

NAMESPACE = "aws"


class AwsConfigError(pulumi.RunError):
    """The stack's ``aws:`` configuration cannot be handed to the provider (Pulumi prints it without a traceback)."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("invalid aws provider config in the stack:\n" + "\n".join(f"  - {e}" for e in errors))


def _camel(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def _fields(cls: type) -> dict[str, Any]:
    """camelCase key -> the Python type of one input class's argument (``str``, ``Sequence[...]``, a class)."""
    found = {}
    for name, parameter in inspect.signature(cls.__init__).parameters.items():  # type: ignore[misc]
        if name != "__self__":
            found[_camel(name)] = typing.get_args(parameter.annotation)[0]  # Input[Optional[T]]: T comes first
    return found


def _input_class(kind: Any) -> type | None:
    """The provider's input class behind a ``ForwardRef('ProviderXArgs')`` (None for plain types)."""
    if isinstance(kind, typing.ForwardRef):
        found = getattr(aws, kind.__forward_arg__, None)
        return found if isinstance(found, type) else None
    return None


def provider_keys() -> dict[str, Any]:
    """Every ``aws:`` key the provider takes, with its Python type."""
    return _fields(aws.ProviderArgs)


def stack_keys() -> list[str]:
    """The ``aws:`` keys this stack sets (the program's config, as the language host hands it over)."""
    keys = set(pulumi.runtime.config.CONFIG.get()) | set(pulumi.runtime.get_config_env())
    return sorted(k.split(":", 1)[1] for k in keys if k.startswith(f"{NAMESPACE}:"))


def _check_object(key: str, value: Any, cls: type, errors: list[str]) -> None:
    if not isinstance(value, Mapping):
        errors.append(f"{key}: {value!r} is not an object; allowed keys: {', '.join(_fields(cls))}")
        return
    allowed = _fields(cls)
    for inner in value:
        if inner not in allowed:
            errors.append(f"{key}.{inner}: unknown key; allowed: {', '.join(allowed)}")


def _parse(key: str, raw: str, kind: Any, errors: list[str]) -> Any:
    """One raw config value as the provider argument's type; appends to ``errors`` when it is not one."""
    name = f"{NAMESPACE}:{key}"
    if kind is str:
        return raw
    if kind is bool:
        if raw.lower() not in ("true", "false"):
            errors.append(f"{name}: {raw!r} is not allowed; use true or false")
        return raw.lower() == "true"
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            errors.append(f"{name}: {raw!r} is not allowed; use a whole number")
            return None
    try:
        value = json.loads(raw)
    except ValueError:
        errors.append(f"{name}: {raw!r} is not a JSON list or object (set it with `pulumi config set --path`)")
        return None
    element = typing.get_args(kind)
    if element:  # Sequence[Input[X]]: a list of X
        if not isinstance(value, list):
            errors.append(f"{name}: {value!r} is not a list")
            return None
        item_class = _input_class(typing.get_args(element[0])[0] if typing.get_args(element[0]) else element[0])
        for index, item in enumerate(value):
            if item_class is not None:
                _check_object(f"{name}[{index}]", item, item_class, errors)
            elif not isinstance(item, str):
                errors.append(f"{name}[{index}]: {item!r} is not a string")
        return value
    cls = _input_class(kind)
    if cls is not None:
        _check_object(name, value, cls, errors)
    return value


def provider_args(region: str, default_tags: Mapping[str, str]) -> dict[str, Any]:
    """The explicit provider's arguments: every ``aws:`` key of the stack, the spec's region, merged default tags.

    Raises ``AwsConfigError`` naming every key that is unknown, malformed, or at odds with the spec.
    """
    allowed = provider_keys()
    snake = {_camel(name): name for name in inspect.signature(aws.ProviderArgs.__init__).parameters}
    errors: list[str] = []
    args: dict[str, Any] = {}
    for key in stack_keys():
        if key not in allowed:
            errors.append(f"{NAMESPACE}:{key}: unknown key of the AWS provider; allowed: {', '.join(allowed)}")
            continue
        raw = pulumi.runtime.get_config(f"{NAMESPACE}:{key}")
        value = _parse(key, str(raw), allowed[key], errors)
        if value is not None:
            args[key] = value
    if "region" in args and args["region"] != region:
        errors.append(f"{NAMESPACE}:region: {args['region']!r} differs from lakehouse:platform.aws.region {region!r}, "
                      "which places every resource of the platform; remove aws:region or make the two equal")
    given_tags = args.get("defaultTags")
    stack_tags: dict[str, Any] = dict(given_tags.get("tags") or {}) if isinstance(given_tags, Mapping) else {}
    clash = sorted(k for k in stack_tags if k in default_tags and stack_tags[k] != default_tags[k])
    if clash:
        errors.append(f"{NAMESPACE}:defaultTags.tags: {', '.join(clash)} are the platform's own default tags; "
                      "leave them to the program")
    if errors:
        raise AwsConfigError(errors)
    args["region"] = region
    args["defaultTags"] = {**(given_tags or {}), "tags": {**stack_tags, **default_tags}}
    secret = {key for key in args if pulumi.runtime.is_config_secret(f"{NAMESPACE}:{key}")}
    return {snake[key]: pulumi.Output.secret(value) if key in secret else value for key, value in args.items()}
