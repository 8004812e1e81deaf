"""Deployment steps as resources (docker and native): what is done through a service's API, not run as a process.

A service's ``steps`` (``ServiceDefinition.steps``) render ``StepPlan``s: register a connector, set up a
CDC source, submit the streaming job. Both local targets build them the same way, after every process
or container: each step waits for its own service, for what its service depends on, and for what its
``after`` names (an enabled service, or an earlier step). A name that is none of these is an ordering
bug and raises, as ``dependencies`` does for processes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from lakehouse_platform.layers import LayerComponent
from lakehouse_platform.model import Layer, PlatformSpec
from lakehouse_platform.services.context import ServiceContext
from lakehouse_platform.services.plans import StepHost, StepPlan
from lakehouse_platform.services.registry import registry
from lakehouse_platform.services.secrets import render_inputs
from lakehouse_platform.targets import Built, UnbuiltDependency


@dataclass(frozen=True)
class MadeStep:
    """A built step: its plan, its resource and the service it belongs to."""

    service: str
    plan: StepPlan
    resource: pulumi.Resource


def build_steps(spec: PlatformSpec, secrets: Mapping[str, pulumi.Output[str]], layers: Mapping[Layer, LayerComponent],
                built: Mapping[str, pulumi.Resource], host: Callable[[str], StepHost],
                waits: Callable[[str, list[str]], list[str]] = lambda _name, deps: deps) -> dict[str, MadeStep]:
    """Every enabled service's steps, in start order, each a child of its service's layer.

    ``built`` holds the processes (or containers) by service; ``waits`` maps a service's dependencies
    to what stands for them on this target (natively a folded job is its owner's process).
    """
    enabled = spec.enabled_services()
    made: dict[str, MadeStep] = {}
    for name in spec.start_order():
        definition = registry()[name]
        if definition.steps is None:
            continue
        # A service's own process already waited for its dependencies; a step-only service waits for them itself.
        deps = [name] if name in built else waits(name, list(enabled[name].depends_on))
        for plan in definition.steps(ServiceContext(spec, name), host(name)):
            unknown = [a for a in plan.after if a not in made and a not in spec.services]
            if unknown:
                raise UnbuiltDependency(f"step {plan.name} of {name} waits for {', '.join(unknown)}: "
                                        "neither a service nor an earlier step")
            after = [a for a in plan.after if a in made or a in enabled]  # a disabled service: nothing to wait for
            missing = [a for a in dict.fromkeys([*deps, *after]) if a not in made and a not in built]
            if missing:
                raise UnbuiltDependency(f"step {plan.name} of {name} waits for {', '.join(missing)}, "
                                        "which is not built (yet)")
            on = [made[a].resource if a in made else built[a] for a in dict.fromkeys([*deps, *after])]
            layer = layers[enabled[name].layer]
            resource = plan.resource(layer.child_name(plan.name), **render_inputs(plan.inputs, secrets),
                                     opts=pulumi.ResourceOptions(parent=layer, depends_on=on))
            made[plan.name] = MadeStep(name, plan, resource)
    return made


def export_steps(spec: PlatformSpec, built: Built, made: Mapping[str, MadeStep]) -> None:
    """Each step's outputs in its layer (``steps``) and in the stack output its plan names (``jobs``, ...)."""
    groups: dict[str, dict[str, Any]] = {}
    for step_name, step in made.items():
        if not step.plan.outputs:
            continue
        values = {attr: getattr(step.resource, attr) for attr in step.plan.outputs}
        built.layer(spec.services[step.service].layer).setdefault("steps", {})[step_name] = values
        groups.setdefault(step.plan.export, {})[step_name] = values
    for group, values in groups.items():
        built.outputs[group] = pulumi.Output.from_input(values)  # one Output: the attributes resolve as a whole
