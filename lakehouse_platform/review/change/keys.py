"""The config diff of two stacks, each changed key with the layer it belongs to, read from the models.

Nothing here lists keys by hand. Walking the two validated specs side by side, a key's layer is the nearest of:
a service's own ``layer`` (``services.<name>.*``), the layer a contract is for (``layers.<layer>.*``), a field's
``json_schema_extra`` (``of_layer``: the ``aws`` section's fields) or its model's ``LAYER`` class attribute
(``storage``, ``identities``, ``tables``, ...). A key none of these places (``target``, ``name``, ``aws.region``,
``lab``) shapes every layer. A declared table's keys are owned by the table's owner, a service's by its owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, get_args

from pydantic import BaseModel

from lakehouse_platform.model import Layer, LayerSpec, PlatformSpec, ServiceSpec, TableSpec

ALL_LAYERS: frozenset[Layer] = frozenset(Layer)


class _Missing:
    """An entry one side does not have (a table added, a topic removed): not a value, so not None."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class ConfigChange:
    """One changed key: its path, both values (``MISSING`` where one side lacks it), where it belongs."""

    key: str
    before: Any
    after: Any
    layers: frozenset[Layer]
    service: str | None = None  # the service whose settings these are
    owners: frozenset[str] = frozenset()  # the owners of what changes where the model names them (a table's)
    on_change: str | None = None  # what changing it does, where its model says so

    @property
    def field(self) -> str:
        """The last part of the key (``memory``, ``version``, ``enabled``)."""
        return self.key.rsplit(".", 1)[-1]

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.key.split("."))


@dataclass(frozen=True)
class _Context:
    layers: frozenset[Layer] = ALL_LAYERS
    service: str | None = None
    owners: frozenset[str] = field(default_factory=frozenset)
    on_change: str | None = None


def plain(value: Any) -> Any:
    """A value as the stack file would say it (models as mappings, enums as their values)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _present(*values: Any) -> list[Any]:
    return [v for v in values if v is not MISSING]


def _enter(path: tuple[str, ...], before: Any, after: Any, ctx: _Context) -> _Context:
    """The context below a node: what its model says about the layer, the service, the owners."""
    nodes = _present(before, after)
    node = nodes[-1]
    if isinstance(node, BaseModel):
        layer = getattr(type(node), "LAYER", None)
        if isinstance(layer, Layer):
            ctx = replace(ctx, layers=frozenset({layer}))
        on_change = getattr(type(node), "ON_CHANGE", None)
        if isinstance(on_change, str):
            ctx = replace(ctx, on_change=on_change)
    if isinstance(node, ServiceSpec):
        ctx = replace(ctx, layers=frozenset(n.layer for n in nodes), service=path[-1])
    elif isinstance(node, LayerSpec):
        ctx = replace(ctx, layers=frozenset({Layer(path[-1])}))
    elif isinstance(node, TableSpec):
        ctx = replace(ctx, owners=frozenset(n.owner for n in nodes))
    return ctx


def _declared_layer(annotation: Any) -> Layer | None:
    """The ``LAYER`` of the model a field holds, directly or as the values of its list or mapping: a section's layer
    is known even where the stack leaves it empty."""
    if isinstance(annotation, type) and isinstance(getattr(annotation, "LAYER", None), Layer):
        return annotation.LAYER  # type: ignore[attr-defined]
    for argument in get_args(annotation):
        found = _declared_layer(argument)
        if found is not None:
            return found
    return None


def _identity(item: BaseModel) -> str | None:
    """How a list entry is known across two versions of a list: ``namespace.name``, its ``name``, else None."""
    name = getattr(item, "name", None)
    if not isinstance(name, str):
        return None
    namespace = getattr(item, "namespace", None)
    return f"{namespace}.{name}" if isinstance(namespace, str) else name


def _keyed(items: list[Any]) -> dict[str, Any]:
    """A list of models by identity (by position where its entries have none, or share one)."""
    ids = [_identity(item) if isinstance(item, BaseModel) else None for item in items]
    if None in ids or len(set(ids)) != len(ids):
        return {str(index): item for index, item in enumerate(items)}
    return {str(key): item for key, item in zip(ids, items, strict=True)}


def _walk(path: tuple[str, ...], before: Any, after: Any, ctx: _Context, out: list[ConfigChange],
          every: bool = False) -> None:
    ctx = _enter(path, before, after, ctx)

    def changed() -> None:
        out.append(ConfigChange(".".join(path), before, after, ctx.layers, ctx.service, ctx.owners, ctx.on_change))

    if before is MISSING or after is MISSING:
        changed()
    elif isinstance(before, BaseModel) and type(before) is type(after):
        for name, info in type(before).model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            child = ctx
            declared = _declared_layer(info.annotation)
            if declared is not None:
                child = replace(child, layers=frozenset({declared}))
            if isinstance(extra.get("layer"), str):
                child = replace(child, layers=frozenset({Layer(str(extra["layer"]))}))
            if isinstance(extra.get("on_change"), str):
                child = replace(child, on_change=str(extra["on_change"]))
            _walk((*path, name), getattr(before, name), getattr(after, name), child, out, every)
    elif isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            _walk((*path, str(plain(key))), before.get(key, MISSING), after.get(key, MISSING), ctx, out, every)
    elif (isinstance(before, list) and isinstance(after, list)
          and any(isinstance(item, BaseModel) for item in (*before, *after))):
        old, new = _keyed(before), _keyed(after)
        for key in [*old, *(k for k in new if k not in old)]:
            _walk((*path, key), old.get(key, MISSING), new.get(key, MISSING), ctx, out, every)
    elif every or plain(before) != plain(after):
        changed()


def config_changes(base: PlatformSpec | None, head: PlatformSpec) -> list[ConfigChange]:
    """Every key whose value differs between the two stacks, in the models' order; a stack the change creates is
    one change of every layer."""
    if base is None:
        return [ConfigChange("stack", MISSING, head.target.value, ALL_LAYERS)]
    out: list[ConfigChange] = []
    _walk((), base, head, _Context(), out)
    return out


def key_layers(spec: PlatformSpec) -> dict[str, frozenset[Layer]]:
    """Every key of a stack (its leaves) with the layers it belongs to: what the review would say of a change to it."""
    out: list[ConfigChange] = []
    _walk((), spec, spec, _Context(), out, every=True)
    return {change.key: change.layers for change in out}


def owners_of(change: ConfigChange, spec: PlatformSpec, layer: Layer) -> set[str]:
    """Who owns what a change touches, in one of its layers: a declared table's owners, the service's owner; for a
    change of every layer (a new stack, its target) the layer's owner and the owners of its services; else the
    layer's owner."""
    if change.owners:
        return set(change.owners)
    if change.service is not None and change.service in spec.services and spec.services[change.service].layer is layer:
        return {spec.owner_of(change.service)}
    if change.layers == ALL_LAYERS:
        return {spec.layers[layer].owner, *(spec.owner_of(name) for name in spec.services_of(layer))}
    return {spec.layers[layer].owner}
