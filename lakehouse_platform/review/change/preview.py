"""What a ``pulumi preview --json`` says the update would do, resource by resource, with each one's layer and owner.

The JSON is the CLI's ``PreviewDigest`` (pkg/display/json.go at the pinned tag): ``steps``, each with ``op``
(``same``, ``create``, ``update``, ``delete``, ``replace`` and its ``create-replacement``/``delete-replaced``
halves, ``read``, ``refresh``, ...), the resource's ``urn``, ``newState``/``oldState`` (``type``, ``inputs``) and
the properties behind it (``diffReasons``, ``replaceReasons``). A resource's layer and owner are read the way the
policy pack reads them (``lakehouse_platform.policies.resources``): its ``lakehouse.*`` labels or tags, else the layer
component it
was built under (the URN's type chain), and the stack's ownership table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.policies.config import stack_context
from lakehouse_platform.policies.resources import (
    LAYER_COMPONENT_PREFIX,
    LOCAL_SERVICE,
    Resource,
    StackContext,
    kind_of,
    layer_of,
    owner_of,
    service_of,
)
from lakehouse_platform.review.change.keys import ALL_LAYERS

#: The step ops that change nothing (or only read): left out of the review.
UNCHANGED = frozenset({"same", "read", "refresh", "discard", "discard-replaced", "remove-pending-replace", "diff",
                       "extend-parameterize"})
#: The halves of a replacement, reported as the one ``replace`` they are.
REPLACEMENT = frozenset({"replace", "create-replacement", "delete-replaced", "import-replacement",
                         "read-replacement"})
#: When one resource has several steps, the one the review reports.
_WEIGHT = {"replace": 4, "delete": 3, "create": 2, "import": 2, "update": 1}
#: Resources that are a running service: updating one restarts (or rolls) it.
RUNS = frozenset({"docker:index/container:Container", LOCAL_SERVICE, "aws:ecs/service:Service",
                  "aws:ecs/taskDefinition:TaskDefinition", "aws:rds/instance:Instance", "aws:msk/cluster:Cluster",
                  "aws:mskconnect/connector:Connector", "aws:kinesisanalyticsv2/application:Application",
                  "aws:emrserverless/application:Application"})
#: Resources that hold data: replacing or deleting one loses what is in it unless it is kept elsewhere.
HOLDS_DATA = frozenset({"docker:index/volume:Volume", "aws:s3/bucket:Bucket", "aws:rds/instance:Instance",
                        "aws:rds/cluster:Cluster", "aws:msk/cluster:Cluster", "aws:msk/topic:Topic"})


class PreviewError(ValueError):
    """A file that is not the JSON ``pulumi preview --json`` prints."""


@dataclass(frozen=True)
class ResourceChange:
    """One resource the update would change."""

    urn: str
    type: str
    name: str
    op: str  # create, update, replace, delete, import
    layers: frozenset[Layer]
    service: str | None
    owner: str | None  # None: each of its layers' owners (a provider, a resource outside every layer)
    reasons: tuple[str, ...]  # the properties that cause it (replaceReasons for a replace, else diffReasons)

    @property
    def what(self) -> str:
        """``docker:Container '<name>'``."""
        return f"{kind_of(self.type)} '{self.name}'"

    @property
    def runs(self) -> bool:
        return self.type in RUNS

    @property
    def holds_data(self) -> bool:
        return self.type in HOLDS_DATA


def read_preview(text: str, source: str) -> list[dict[str, Any]]:
    """The steps of a preview's JSON; PreviewError names what is wrong with it."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PreviewError(f"{source}: not JSON ({exc.msg} at line {exc.lineno}); give the output of "
                           "`pulumi preview --json`") from None
    if not isinstance(document, dict) or not isinstance(document.get("steps", []), list):
        raise PreviewError(f"{source}: not the JSON of `pulumi preview --json` (an object with 'steps')")
    steps = document.get("steps", [])
    for index, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("op"), str) or not isinstance(step.get("urn"), str):
            raise PreviewError(f"{source}: steps.{index} has no 'op' and 'urn'")
    return steps


def _layers(resource: Resource) -> frozenset[Layer]:
    if resource.type.startswith(LAYER_COMPONENT_PREFIX):
        return frozenset({Layer(resource.type[len(LAYER_COMPONENT_PREFIX):].lower())})
    if resource.type.startswith("pulumi:providers:"):
        return ALL_LAYERS  # a provider's change (its version, its region) reaches every layer it serves
    found = layer_of(resource)
    return frozenset({Layer(found)}) if found in {layer.value for layer in Layer} else ALL_LAYERS


def resource_changes(steps: list[dict[str, Any]], spec: PlatformSpec, stack: str) -> list[ResourceChange]:
    """Each resource the steps change, once (a replacement's halves as one ``replace``), in the preview's order."""
    context = StackContext.from_dict(stack_context(spec, stack))
    chosen: dict[str, tuple[str, dict[str, Any]]] = {}
    for step in steps:
        op = "replace" if step["op"] in REPLACEMENT else step["op"]
        if op in UNCHANGED or step["urn"].endswith("::") or ":pulumi:Stack::" in step["urn"]:
            continue
        if op not in _WEIGHT:
            op = "update"  # an op this version does not know: reviewed as the least it can be
        current = chosen.get(step["urn"])
        if current is None or _WEIGHT[op] > _WEIGHT[current[0]]:
            chosen[step["urn"]] = (op, step)
    out = []
    for urn, (op, step) in chosen.items():
        state = step.get("newState") or step.get("oldState") or {}
        resource_type = state.get("type") or urn.split("::")[2].split("$")[-1]
        resource = Resource(type=resource_type, name=urn.rsplit("::", 1)[-1], props=state.get("inputs") or {},
                            urn=urn, parent=state.get("parent"))
        layers = _layers(resource)
        single = next(iter(layers)).value if len(layers) == 1 else None
        service = service_of(resource, context) if single else None
        owner = (owner_of(resource, context) if single else None)
        reasons = step.get("replaceReasons") if op == "replace" else step.get("diffReasons")
        out.append(ResourceChange(urn, resource_type, resource.name, op, layers, service, owner,
                                  tuple(str(r) for r in reasons or ())))
    return out
