"""A stack's dynamic resources taken over by this release's providers, before Pulumi acts on them.

Pulumi runs a dynamic resource's ``read`` and ``delete`` (a refresh, a destroy, a resource the program no longer
declares, the delete half of a replacement) with the provider *recorded in the state*, and only ``diff``, ``create``
and ``update`` with the program's. A release whose recorded provider needs files of its own checkout cannot run
once an upgrade in place has replaced those files: 0.3.0's ``LocalService`` loads
``<checkout>/infra/targets/native/watchdog.py`` by path, so every delete of a 0.3.0 resource fails with
``FileNotFoundError`` after ``git checkout`` of a later release, and the stack is stuck.

So the operator's commands (``up``, ``down``, ``refresh``; ``state adopt`` on its own) first rewrite, in the
stack's state, every dynamic resource's recorded provider (``__provider`` in its inputs and outputs) with this
release's provider of the same resource type: Pulumi's own state commands, export then import, and only when a
recorded provider differs. From then on every operation on the stack runs this release's code, which reads the
outputs each supported earlier release recorded (``SUPPORTED_RELEASES``; ``tests/control/test_adopt.py`` holds a
resource of each, as recorded). A bare ``pulumi up`` does the same rewrite through the providers' updates
(``code_changed``), but only for the resources the program still declares, and only after the refresh and the
replacements that may need the old code: hence this step.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi import automation as auto
from pulumi.dynamic.dynamic import serialize_provider

#: The releases whose stacks this one takes over in place (docs/operations/upgrades.md says the same).
SUPPORTED_RELEASES = ("0.3.0", "0.4.0")
#: Where Pulumi keeps a dynamic resource's serialized provider, among its inputs and outputs.
PROVIDER_KEY = "__provider"
#: The dynamic resources the platform itself registers (not a service's: those come from the registry,
#: ``Registry.dynamic_providers``) -> the provider class that serves each (``module:Class``). A resource's type is
#: ``pulumi-python:<its Resource class's _resource_type_name>``; a test holds ``providers()`` to what the programs
#: record.
PLATFORM_PROVIDERS: Mapping[str, str] = {
    "pulumi-python:dynamic/native:LocalService":
        "lakehouse_platform.targets.native.local_service.provider:LocalServiceProvider",
    "pulumi-python:dynamic/native:NativeRuntime": "lakehouse_platform.targets.native.runtime:NativeRuntimeProvider",
    "pulumi-python:dynamic/tables:DeclaredTable":
        "lakehouse_platform.targets.declared_tables.provider:DeclaredTableProvider",
    "pulumi-python:dynamic/governance:SelfSignedCertificate":
        "lakehouse_platform.resources.certificate:CertificateProvider",
    "pulumi-python:dynamic/lab:LabState": "lakehouse_platform.targets.lab_state:LabStateProvider",
    "pulumi-python:dynamic/state:StateOwner": "lakehouse_platform.targets.state_owner:StateOwnerProvider",
    "pulumi-python:dynamic/images:PushedImage": "lakehouse_platform.components.aws.pushed_image:PushedImageProvider",
    "pulumi-python:dynamic/aws:EcsTaskRun": "lakehouse_platform.components.aws.run_task:EcsTaskRunProvider",
}


@functools.cache
def providers() -> Mapping[str, str]:
    """Every dynamic resource type of the platform -> its provider (``module:Class``): its own and its services'."""
    from lakehouse_platform.services.registry import registry

    return {**PLATFORM_PROVIDERS, **registry().dynamic_providers}


class AdoptionRefused(RuntimeError):
    """The state holds a dynamic resource of a type this release has no provider for: nothing was changed."""


@functools.cache
def current_provider(resource_type: str) -> str:
    """This release's serialized provider for ``resource_type``: exactly what its program records."""
    module, _, name = providers()[resource_type].partition(":")
    provider_class: Callable[[], Any] = getattr(importlib.import_module(module), name)
    return serialize_provider(provider_class())


@dataclass(frozen=True)
class Adopted:
    """What ``adopt_deployment`` rewrote: the URNs whose recorded provider was another release's."""

    urns: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.urns)


def adopt_deployment(deployment: dict[str, Any]) -> Adopted:
    """Rewrite, in an exported deployment (``pulumi stack export``'s ``deployment``), every dynamic resource's
    recorded provider that is not this release's. Refuses, changing nothing, a dynamic type it does not know."""
    resources = deployment.get("resources") or []
    known = providers()
    unknown = sorted({r["type"] for r in resources
                      if r.get("type", "").startswith("pulumi-python:dynamic") and r["type"] not in known})
    if unknown:
        raise AdoptionRefused(f"the stack's state holds dynamic resources of {', '.join(unknown)}, which this release "
                              "does not provide: it was written by another program, or a newer release")
    urns = []
    for resource in resources:
        if resource.get("type") not in known:
            continue
        current = current_provider(resource["type"])
        touched = False
        for section in ("inputs", "outputs"):
            props = resource.get(section)
            if isinstance(props, dict) and PROVIDER_KEY in props and props[PROVIDER_KEY] != current:
                props[PROVIDER_KEY] = current
                touched = True
        if touched:
            urns.append(resource["urn"])
    return Adopted(tuple(urns))


def adopt(stack: auto.Stack, say: Callable[[str], None] = print) -> Adopted:
    """Take over ``stack``'s dynamic resources recorded by another release (module docstring); what was rewritten.

    The state is exported and imported as stored: secrets stay encrypted (never ``--show-secrets``). A stack that
    holds nothing of another release is left as it is (no import)."""
    exported = stack.export_stack()
    deployment = exported.deployment
    if not isinstance(deployment, dict):
        return Adopted(())  # a stack never deployed: nothing recorded
    adopted = adopt_deployment(deployment)
    if adopted:
        stack.import_stack(exported)
        say(f"==> {len(adopted.urns)} resource(s) of stack {stack.name} recorded by an earlier release now run this "
            "release's providers (their state kept as it was)")
    return adopted
