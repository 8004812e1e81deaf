"""What a rule sees: one resource, the stack's contract, and how a violation names its resource.

``Resource``
    One resource as the engine (or the mocks) shows it: type token, name, URN, the parent's URN and
    the input properties with their wire names (``envs``, ``healthcheck``, ``containerDefinitions``,
    ...) and wire forms (``lakehouse_platform/policies/wire.py``).

``StackContext``
    What the stack promises, taken from its ``lakehouse:platform`` config (the ownership table,
    the warehouse prefixes, the recovery promise). ``lakehouse_platform/policies/config.py`` renders it; the pack
    receives it as policy config or reads it from the stack config the engine hands to it
    (``lakehouse_platform/policies/engine.py``), along with the values of the stack's secret config. Rules that need
    it and do not get it say so.

Messages
--------
Every message names the resource, its layer and owner, and the rule it breaks::

    docker:Container 'rest-fixture' (layer catalog, owner platform) breaks catalog-no-in-memory-sqlite: ...

The layer comes from the resource's ``lakehouse.layer`` label/tag, else from the layer component
it was built under (the URN's parent type chain holds ``platform:layers:<Layer>``); the owner from
its ``lakehouse.owner`` label/tag, else from the stack's ownership table by the rule of
``lakehouse_platform.labels`` (the layer's owner, or the owner of the service of that layer the resource is
for: its ``lakehouse.service`` label, else its name, ``<service>-...`` or ``<platform>-<service>-...``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from lakehouse_platform.labels import LABEL_LAYER, LABEL_OWNER, LABEL_SERVICE, PLATFORM_TYPE, Ownership
from lakehouse_platform.policies.wire import is_unknown, reveal

LAYER_COMPONENT_PREFIX = "platform:layers:"

# Resource types
DOCKER_CONTAINER = "docker:index/container:Container"
DOCKER_REMOTE_IMAGE = "docker:index/remoteImage:RemoteImage"
LOCAL_SERVICE = "pulumi-python:dynamic/native:LocalService"
NATIVE_RUNTIME = "pulumi-python:dynamic/native:NativeRuntime"  # the stack's copy of the operations code
ECS_TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition"
ECS_SERVICE = "aws:ecs/service:Service"
LB_TARGET_GROUP = "aws:lb/targetGroup:TargetGroup"
IAM_ACCESS_KEY = "aws:iam/accessKey:AccessKey"
RDS_INSTANCE = "aws:rds/instance:Instance"
RDS_CLUSTER = "aws:rds/cluster:Cluster"
RDS_CLUSTER_INSTANCE = "aws:rds/clusterInstance:ClusterInstance"
BACKUP_PLAN = "aws:backup/plan:Plan"


# --------------------------------------------------------------------------------------------
# Plain data
# --------------------------------------------------------------------------------------------


@dataclass
class Resource:
    """One registered resource: type, name, inputs (wire names and wire forms), URN and parent URN.

    ``provider`` holds the inputs of the resource's explicit provider (its ``defaultTags`` count as
    tags); ``deps`` maps an input name to the URNs it depends on (when the engine says); ``id`` is
    the physical id when known (mocks make it up), used only to link S3 sub-resources to buckets.
    """

    type: str
    name: str
    props: dict[str, Any]
    urn: str = ""
    parent: str | None = None
    provider: dict[str, Any] | None = None
    deps: dict[str, list[str]] = field(default_factory=dict)
    id: str | None = None


class Violation(str):
    """A violation message; ``urn`` (when set) is the resource a stack policy reports it against."""

    urn: str | None

    def __new__(cls, message: str, urn: str | None = None) -> Self:
        obj = super().__new__(cls, message)
        obj.urn = urn
        return obj


@dataclass(frozen=True)
class StackContext:
    """What the stack's config promises, as far as the policies need it.

    ``secrets`` (config key -> value) holds the stack's secret config values when the engine handed
    them to the pack; it is never rendered, printed or written anywhere.
    """

    stack: str
    target: str
    platform: str
    layer_owners: Mapping[str, str]
    services: Mapping[str, Mapping[str, Any]]  # name -> {"layer", "owner", "enabled"}
    warehouse_bucket: str = "warehouse"
    warehouse_prefixes: tuple[str, ...] = ("",)
    backup_retention_days: int = 7
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StackContext:
        storage = data.get("storage") or {}
        recovery = data.get("recovery") or {}
        return cls(
            stack=str(data.get("stack", "")),
            target=str(data.get("target", "")),
            platform=str(data.get("platform", "")),
            layer_owners={str(k): str(v["owner"] if isinstance(v, Mapping) else v)
                          for k, v in (data.get("layers") or {}).items()},
            services={str(k): dict(v) for k, v in (data.get("services") or {}).items()},
            warehouse_bucket=str(storage.get("bucket", "warehouse")),
            warehouse_prefixes=tuple(str(p) for p in storage.get("warehouse_prefixes", [""])),
            backup_retention_days=int(recovery.get("backup_retention_days", 7)),
        )

    @functools.cached_property
    def ownership(self) -> Ownership:
        """The ownership table in the form ``lakehouse_platform.labels`` applies its owner rule to."""
        return Ownership(
            layer_owners=self.layer_owners,
            service_layers={name: str(svc.get("layer")) for name, svc in self.services.items()},
            service_owners={name: (str(svc["owner"]) if svc.get("owner") else None)
                            for name, svc in self.services.items()},
        )

    def owner_of(self, layer: str | None, service: str | None = None) -> str | None:
        """The owner a resource of ``layer`` (made for ``service``) must carry (``lakehouse_platform.labels``' rule)."""
        return self.ownership.owner(layer, service)


@dataclass(frozen=True)
class PolicyDef:
    """One rule: its name, what it promises, whether it sees one resource or the whole stack."""

    name: str
    description: str
    scope: str  # "resource" or "stack"
    check: Callable[..., list[str]]
    level: str = "mandatory"
    needs_context: bool = False


# --------------------------------------------------------------------------------------------
# Kinds, layers, owners and labels
# --------------------------------------------------------------------------------------------


def is_dynamic(resource_type: str) -> bool:
    """A Python dynamic resource: the native target's LocalService (or another of its kind)."""
    return resource_type.startswith("pulumi-python:dynamic")


def kind_of(resource_type: str) -> str:
    """A short, readable kind: ``docker:Container``, ``aws:BucketLifecycleConfiguration``, ``native:LocalService``."""
    if is_dynamic(resource_type):
        module = resource_type.split(":", 1)[1].split(":")[0]  # dynamic/native
        package = module.split("/", 1)[1] if "/" in module else "dynamic"
        return f"{package}:{resource_type.rsplit(':', 1)[-1]}"
    return f"{resource_type.split(':', 1)[0]}:{resource_type.rsplit(':', 1)[-1]}"


def urn_type_chain(urn: str) -> list[str]:
    """The qualified type of a URN as a list: parent types first, the resource's own type last."""
    parts = urn.split("::")
    return parts[2].split("$") if len(parts) >= 4 else []


def layer_component_of(urn: str) -> str | None:
    """The layer whose component the resource was built under, read from its URN."""
    for token in reversed(urn_type_chain(urn)[:-1]):
        if token.startswith(LAYER_COMPONENT_PREFIX):
            return token[len(LAYER_COMPONENT_PREFIX):].lower()
    return None


def _tags(value: Any) -> dict[str, str]:
    value = reveal(value)
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items() if v is not None and not is_unknown(v)}
    return {}


def labels_of(resource: Resource) -> dict[str, str]:
    """The labels (docker, native) or tags (aws, with the provider's default tags) of a resource."""
    props = resource.props
    if resource.type.startswith("docker:"):
        raw = reveal(props.get("labels"))
        if isinstance(raw, list):
            return {str(item.get("label")): str(item.get("value")) for item in raw
                    if isinstance(item, Mapping) and item.get("label") is not None}
        return _tags(raw)
    if resource.type.startswith("aws:"):
        merged: dict[str, str] = {}
        if resource.provider:
            default_tags = reveal(resource.provider.get("defaultTags"))
            if isinstance(default_tags, Mapping):
                merged.update(_tags(default_tags.get("tags")))
        merged.update(_tags(props.get("tags")))
        return merged
    return _tags(props.get("labels"))


def service_label(resource: Resource) -> str | None:
    return labels_of(resource).get(LABEL_SERVICE)


@functools.cache
def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def snake(name: str) -> str:
    """``blockPublicAcls`` -> ``block_public_acls``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@functools.cache
def _sdk_declares_input(resource_type: str, input_name: str) -> bool | None:
    """Whether the provider SDK's resource class takes an input (read from its source, not imported)."""
    try:
        package, module, _ = resource_type.split(":")
        module_path, file_stem = module.split("/")
    except ValueError:
        return None
    package_dir = _package_dir({"aws": "pulumi_aws", "docker": "pulumi_docker"}.get(package, ""))
    if package_dir is None:
        return None
    folder = package_dir if module_path == "index" else package_dir / module_path.replace("/", "_")
    source = folder / f"{snake(file_stem)}.py"
    if not source.exists():
        return None
    pattern = re.compile(rf"^\s+{input_name}: pulumi\.Input\[", re.MULTILINE)
    return bool(pattern.search(source.read_text(encoding="utf-8")))


def can_carry_labels(resource: Resource) -> bool:
    """Whether the resource's type takes labels (docker) or tags (aws); native services always do."""
    if resource.type == LOCAL_SERVICE:
        return True
    if resource.type.startswith("docker:"):
        declared = _sdk_declares_input(resource.type, "labels")
        return declared if declared is not None else "labels" in resource.props
    if resource.type.startswith("aws:"):
        declared = _sdk_declares_input(resource.type, "tags")
        return declared if declared is not None else "tags" in resource.props
    return "labels" in resource.props


def is_exempt(resource: Resource) -> bool:
    """The stack, providers, the platform's component and the layer components themselves carry no labels."""
    t = resource.type
    return t in ("pulumi:pulumi:Stack", PLATFORM_TYPE) or t.startswith(("pulumi:providers:",
                                                                               LAYER_COMPONENT_PREFIX))


def structural_layer(resource: Resource, index: Mapping[str, Resource] | None = None) -> str | None:
    """The layer component the resource sits under (URN type chain, else the parent chain)."""
    layer = layer_component_of(resource.urn)
    if layer:
        return layer
    seen = set()
    parent = resource.parent
    while index is not None and parent and parent not in seen:
        seen.add(parent)
        node = index.get(parent)
        if node is None:
            break
        if node.type.startswith(LAYER_COMPONENT_PREFIX):
            return node.type[len(LAYER_COMPONENT_PREFIX):].lower()
        parent = node.parent
    return None


def platform_of(resource: Resource, index: Mapping[str, Resource]) -> str | None:
    """The name of the platform component (``PLATFORM_TYPE``) the resource sits under: the platform it belongs to,
    whatever the stack config calls it (a program names its platforms; a stack may hold several)."""
    seen = set()
    parent = resource.parent
    while parent and parent not in seen:
        seen.add(parent)
        node = index.get(parent)
        if node is None:
            return None
        if node.type == PLATFORM_TYPE:
            return node.name
        parent = node.parent
    return None


def layer_of(resource: Resource, index: Mapping[str, Resource] | None = None) -> str | None:
    """The resource's layer: its label/tag, else the layer component it was built under."""
    label = labels_of(resource).get(LABEL_LAYER)
    if label:
        return label
    return structural_layer(resource, index)


def named_service(resource: Resource, layer: str | None, context: StackContext | None) -> str | None:
    """The service of ``layer`` a resource is named after (``trino-image``, ``lakehouse-trino-logs``), if any.

    The targets name a service's resources ``<service>-...`` (docker, native) or
    ``<platform>-<service>-...`` (aws); the longest service name of the resource's own layer that
    fits wins (``trino-worker`` over ``trino``). Services of other layers never match: a
    governance resource made for a catalog is governance's.
    """
    if context is None or layer is None:
        return None
    best: str | None = None
    for service, svc in context.services.items():
        if svc.get("layer") != layer:
            continue
        for stem in (service, f"{context.platform}-{service}" if context.platform else service):
            fits = resource.name == stem or resource.name.startswith(stem + "-")
            if fits and (best is None or len(service) > len(best)):
                best = service
    return best


def service_of(resource: Resource, context: StackContext | None,
               index: Mapping[str, Resource] | None = None) -> str | None:
    """The service a resource is for: its ``lakehouse.service`` label; a resource that carries none
    of the lakehouse labels (images, role policies, bucket sub-resources) is its name's service."""
    labels = labels_of(resource)
    if labels.get(LABEL_SERVICE):
        return labels[LABEL_SERVICE]
    if labels.get(LABEL_LAYER) or labels.get(LABEL_OWNER):
        return None
    return named_service(resource, layer_of(resource, index), context)


def owner_of(resource: Resource, context: StackContext | None,
             index: Mapping[str, Resource] | None = None) -> str | None:
    """The resource's owner: its ``lakehouse.owner`` label, else the ownership table's (the rule of ``labels``)."""
    labels = labels_of(resource)
    if labels.get(LABEL_OWNER):
        return labels[LABEL_OWNER]
    if context is not None:
        return context.owner_of(layer_of(resource, index), service_of(resource, context, index))
    return None


def message(resource: Resource, rule: str, detail: str, context: StackContext | None,
            index: Mapping[str, Resource] | None = None) -> Violation:
    """``<kind> '<name>' (layer <layer>, owner <owner>) breaks <rule>: <detail>``."""
    layer = layer_of(resource, index) or "unknown"
    owner = owner_of(resource, context, index) or "unknown"
    return Violation(f"{describe(resource)} (layer {layer}, owner {owner}) breaks {rule}: {detail}",
                     resource.urn or None)


def describe(resource: Resource) -> str:
    """``docker:Container 'trino'``."""
    return f"{kind_of(resource.type)} '{resource.name}'"


def index_of(resources: Sequence[Resource]) -> dict[str, Resource]:
    """URN -> resource."""
    return {r.urn: r for r in resources if r.urn}


def no_context(rule: str, why: str) -> Violation:
    """The stack-level message of a rule that needs the stack's contract and did not get it."""
    return Violation(
        f"stack (layer unknown, owner unknown) breaks {rule}: cannot check {why}: the stack's platform config "
        "(lakehouse:platform) did not reach the policy pack; run `pulumi preview --policy-pack "
        "lakehouse_platform/policies` with a "
        "Pulumi CLI that passes stack config to policy packs, or add `--policy-pack-config` rendered by "
        "`lakehouse policy-pack --config <stack>`"
    )


def fmt_days(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# AWS tag values allow letters, digits, white space and _ . : / = + - @ only; the aws target drops the
# rest ("each engine's team" -> "each engines team"), so owners are compared in that form on aws.
_TAG_VALUE_DISALLOWED = re.compile(r"[^\w\s.:/=+\-@]", re.UNICODE)


def aws_tag_value(value: str) -> str:
    """A value as the aws target writes it into a tag (lakehouse_platform.components.aws.common.tag_value)."""
    return " ".join(_TAG_VALUE_DISALLOWED.sub("", value).split())[:256]


def same_value(resource: Resource, actual: str | None, expected: str) -> bool:
    """Label values compared as the target writes them (aws tags drop some characters)."""
    if resource.type.startswith("aws:"):
        return actual is not None and aws_tag_value(actual) == aws_tag_value(expected)
    return actual == expected
