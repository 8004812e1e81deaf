"""The configuration reference and the services table, rendered as Markdown from the models and the registry.

The docs site's configuration pages are filled from these functions at every build (the MkDocs hook
``docs/hooks/reference.py``), so they cannot drift from what the loader accepts: every key a stack's
``lakehouse:platform`` may set, with its type, default, allowed values and description, is read from
``PlatformSpec`` and the models it holds; every service's defaults and where it runs, from the registry.
A field without a description is an error (``UndocumentedField``), so the build fails until it has one.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from lakehouse_platform.config import CONFIG_KEY
from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.services.registry import registry

#: The default of a field that has none.
REQUIRED = object()


class UndocumentedField(ValueError):
    """A config field has no description: the reference would have a hole."""


@dataclass(frozen=True)
class Section:
    """One model at one key path of the stack config (``services.<name>.health``)."""

    path: str
    model: type[BaseModel]

    @property
    def anchor(self) -> str:
        """The section's id on the page (stable: derived from its path)."""
        return "cfg-" + (re.sub(r"[^a-z0-9]+", "-", self.path.lower()).strip("-") or "top")


def sections(model: type[BaseModel] = PlatformSpec, path: str = "") -> Iterator[Section]:
    """Every model reachable from ``model``, depth first in field order, each with its key path."""
    yield Section(path, model)
    for name, info in model.model_fields.items():
        for nested_path, nested in _nested(info.annotation, f"{path}.{name}" if path else name, name):
            yield from sections(nested, nested_path)


def _nested(annotation: Any, path: str, name: str) -> list[tuple[str, type[BaseModel]]]:
    """The key paths and models of a field that holds models (directly, optionally, in a list or a map).

    A union of models (a discriminated one: the connectors) gives one section per member, named by the
    value of its discriminator.
    """
    annotation = _strip_optional(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and args:
        return _nested(args[0], f"{path}[]", name)
    if origin is dict and len(args) == 2:
        return _nested(args[1], f"{path}.<{_singular(name)}>", name)
    members = _models_of(annotation)
    if len(members) == 1:
        return [(path, members[0])]
    return [(f"{path} ({_variant(model)})", model) for model in members]


def _models_of(annotation: Any) -> list[type[BaseModel]]:
    """The models a type is: one, or each member of a union of models (Annotated metadata dropped)."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if _is_model(annotation):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        if all(_is_model(m) for m in members):
            return list(members)
    return []


def _variant(model: type[BaseModel]) -> str:
    """How a stack picks this member of a union: its one-value ``Literal`` field (``kind: iceberg-sink``)."""
    for name, info in model.model_fields.items():
        values = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is Literal else ()
        if len(values) == 1:
            return f"{name}: {values[0]}"
    return model.__name__


def _singular(name: str) -> str:
    return name[:-3] + "y" if name.endswith("ies") else name.removesuffix("s")


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _optional(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in typing.get_args(
        annotation)


def type_name(annotation: Any, links: dict[type[BaseModel], str] | None = None) -> str:
    """A field's type in words: ``integer``, ``list of string``, ``map of string to section``."""
    optional = _optional(annotation)
    annotation = _strip_optional(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    models = _models_of(annotation)
    if models:
        if len(models) == 1:
            name = f"[section](#{links[models[0]]})" if links and models[0] in links else "section"
        else:
            name = " or ".join(f"[{_variant(m)}](#{links[m]})" if links and m in links else _variant(m)
                               for m in models)
    elif origin is Literal or (isinstance(annotation, type) and issubclass(annotation, Enum)):
        name = "string"
    elif origin is list:
        name = f"list of {type_name(args[0], links)}" if args else "list"
    elif origin is dict:
        name = f"map of {type_name(args[0], links)} to {type_name(args[1], links)}" if args else "map"
    elif annotation is bool:
        name = "boolean"
    elif annotation is int:
        name = "integer"
    elif annotation is float:
        name = "number"
    elif annotation is str:
        name = "string"
    else:
        name = getattr(annotation, "__name__", str(annotation))
    return f"{name} or null" if optional else name


def choices(annotation: Any) -> list[str]:
    """The values a field (or each item of a list field) may take, where the type names them."""
    annotation = _strip_optional(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return [str(a) for a in args]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(member.value) for member in annotation]
    if origin is list and args:
        return choices(args[0])
    if origin is dict and args:
        return choices(args[0])  # an enum-keyed map: its keys
    return []


#: Constraint attributes of pydantic's field metadata (annotated-types' Ge, Le, ..., its own general
#: metadata for ``pattern``), and how each reads.
CONSTRAINTS = (("ge", "≥ {}"), ("gt", "> {}"), ("le", "≤ {}"), ("lt", "< {}"), ("min_length", "at least {} long"),
               ("max_length", "at most {} long"), ("pattern", "matches `{}`"))


def constraints(info: FieldInfo) -> list[str]:
    """The bounds and patterns pydantic enforces on a field, in words."""
    found: list[str] = []
    for item in info.metadata:
        for attribute, form in CONSTRAINTS:
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(form.format(value))
    return found


#: A default longer than this is shown as a YAML block under its section's table, not in a cell.
INLINE_DEFAULT_CHARS = 60


def default_value(info: FieldInfo) -> Any:
    """The plain (JSON-like) default of a field; ``REQUIRED`` when the field has none."""
    if info.is_required():
        return REQUIRED
    return _plain(info.get_default(call_default_factory=True))


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    return value


def _default_cell(value: Any, anchor: str | None, key: str) -> tuple[str, str | None]:
    """The default column's text, and the YAML block to show under the table when it is too long."""
    if value is REQUIRED:
        return "required", None
    if isinstance(value, dict) and anchor:
        return f"[its defaults](#{anchor})", None
    inline = json.dumps(value, ensure_ascii=False)
    if len(inline) <= INLINE_DEFAULT_CHARS:
        return f"`{inline}`", None
    block = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=100)
    return "below", block


def description_of(owner: type[BaseModel], name: str, info: FieldInfo) -> str:
    """A field's description; an error naming the field when it has none."""
    if not (info.description or "").strip():
        raise UndocumentedField(
            f"{owner.__module__}.{owner.__name__}.{name} has no description; give it "
            "Field(description=...) so the configuration reference can say what it is")
    return " ".join(info.description.split())  # type: ignore[union-attr]


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell: pipes escaped, and outside code spans angle brackets too."""
    parts = text.replace("|", "\\|").split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _docstring(model: type[BaseModel]) -> str:
    doc = inspect.cleandoc(model.__doc__ or "")
    return re.sub(r"``([^`]+)``", r"`\1`", doc)


def spec_reference(root: type[BaseModel] = PlatformSpec) -> str:
    """The configuration reference: one section per model of the stack config, one row per key."""
    found = list(sections(root))
    anchors = {s.path: s.anchor for s in found}
    lines: list[str] = []
    for section in found:
        rows, blocks = [], []
        for name, info in section.model.model_fields.items():
            nested = _nested(info.annotation, f"{section.path}.{name}" if section.path else name, name)
            links = {model: anchors[path] for path, model in nested}
            allowed = [f"`{c}`" for c in choices(info.annotation)] + constraints(info)
            anchor = anchors[nested[0][0]] if len(nested) == 1 else None
            default, block = _default_cell(default_value(info), anchor, name)
            if block:
                blocks.append(f"Default of `{name}`:\n\n```yaml\n{block}```\n")
            rows.append("| " + " | ".join((
                f"`{name}`",
                _cell(type_name(info.annotation, links)),
                default,
                _cell(", ".join(allowed)) if allowed else "",
                _cell(description_of(section.model, name, info)),
            )) + " |")
        title = f"`{CONFIG_KEY}`" if not section.path else f"`{section.path}`"
        lines += [f"## {title} {{#{section.anchor}}}", "", _docstring(section.model), "",
                  "| key | type | default | allowed | description |", "|---|---|---|---|---|", *rows, "", *blocks]
    return "\n".join(lines)


def _on_target(definition: Any, target: Target) -> str:
    """How one target runs a service: a container, a process, a managed service, folded, or not at all."""
    if definition.unavailable_on(target) is not None:
        return "no"
    if target is Target.AWS and definition.aws.managed:
        return f"managed: {definition.aws.managed}"
    if target is Target.NATIVE and definition.native.folded and definition.native.process is None:
        return f"no process: {definition.native.folded}"
    renderer = {Target.DOCKER: definition.docker.container, Target.NATIVE: definition.native.process,
                Target.AWS: definition.aws.task}[target]
    if renderer is not None:
        return {Target.DOCKER: "container", Target.NATIVE: "local process", Target.AWS: "ECS Fargate"}[target]
    if definition.steps is not None:
        return "deployment steps"
    return "no"


def services_reference() -> str:
    """Every service and job of the registry: its defaults, and how (or why not) each target runs it."""
    definitions = list(registry())
    lines = ["| service | layer | kind | what it is | pin (native, aws where they differ) | memory | docker | native "
             "| aws |", "|---|---|---|---|---|---|---|---|---|"]
    for definition in definitions:
        default = definition.default
        pins = [str(default["version"])]
        if default.get("native_version"):
            pins.append(f"native {default['native_version']}")
        if default.get("aws_version"):
            pins.append(f"aws {default['aws_version']}")
        kind = default.get("kind", "server") + (f", follows `{definition.job_of}`" if definition.job_of else "")
        lines.append("| " + " | ".join(_cell(cell) for cell in (
            f"`{definition.name}`", str(default["layer"]), kind, definition.summary or str(default.get("role", "")),
            ", ".join(pins), str(default["memory"]),
            *(_on_target(definition, target) for target in (Target.DOCKER, Target.NATIVE, Target.AWS)),
        )) + " |")
    lines += ["", "Where a service cannot run, and why (the model refuses it there with this reason):", "",
              "| service | target | why |", "|---|---|---|"]
    for definition in definitions:
        for target in (Target.DOCKER, Target.NATIVE, Target.AWS):
            if (why := definition.unavailable_on(target)) is not None:
                lines.append(f"| `{definition.name}` | {target.value} | {_cell(why)} |")
    lines += ["", "Default ports (internal / external; `-` where the port is not published to the host):", "",
              "| service | port | internal | external |", "|---|---|---|---|"]
    for definition in definitions:
        for port, numbers in (definition.default.get("ports") or {}).items():
            external = numbers.get("external")
            lines.append(f"| `{definition.name}` | `{port}` | {numbers['internal']} | "
                         f"{external if external is not None else '-'} |")
    return "\n".join(lines) + "\n"


#: How the runbook makes each secret's value: 32 random bytes, hex (every secret the cloud reads is a free string).
GENERATED_VALUE = '"$(openssl rand -hex 32)"'


def secret_commands(spec: PlatformSpec, stack: str) -> list[str]:
    """The ``pulumi config set --secret`` line of every secret the stack must set on aws, each with what reads it."""
    from lakehouse_platform.services.secrets import required_on_aws

    return [f"pulumi config set --secret lakehouse:{item.key} {GENERATED_VALUE} --stack {stack}   # {item.used_by}"
            for item in required_on_aws(spec)]


def cloud_secrets_reference(stack: str = "cloud") -> str:
    """The cloud runbook's secrets step for ``Pulumi.<stack>.yaml`` as committed, as a shell block."""
    from lakehouse_platform.config import load_stack

    return "```bash\n" + "\n".join(secret_commands(load_stack(stack), stack)) + "\n```"
