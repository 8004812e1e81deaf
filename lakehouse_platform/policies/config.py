"""What the policy pack knows about a stack: its contract (from the stack file) and its enforcement levels.

Two things reach the pack from here:

* The stack context: the ownership table (layer owners, service owners), the platform name, the
  warehouse bucket and prefixes and the recovery promise, taken from the stack's validated
  ``lakehouse:platform`` config (``lakehouse_platform.model.load_platform``), so the policies check the same
  contract the program builds and ``lakehouse review`` prints.
* The enforcement levels: ``lakehouse_platform/policies/enforcement.yaml`` maps stack -> policy -> advisory |
  mandatory | disabled; a ``"*"`` entry applies to every stack; anything unlisted keeps the
  policy's own default (mandatory, except the digest advice).

The pack reads both by itself (see ``lakehouse_platform/policies/__main__.py``). For a CLI that does not hand the
stack config to policy packs, or to pin levels in CI, render them as policy-pack config::

    lakehouse policy-pack --config lab -o .state/policy-lab.json
    pulumi preview --stack lab --policy-pack "$(lakehouse policy-pack)" --policy-pack-config .state/policy-lab.json
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from lakehouse_platform.policies.registry import LEVELS, POLICIES, POLICY_NAMES
from lakehouse_platform.policies.resources import StackContext

PACK_DIR = Path(__file__).resolve().parent
ENFORCEMENT_FILE = PACK_DIR / "enforcement.yaml"
ALL_STACKS = "*"


class EnforcementError(ValueError):
    """An enforcement file naming an unknown policy or level."""


def stack_context(spec: Any, stack: str) -> dict[str, Any]:
    """The plain stack context the rules need, from a validated ``PlatformSpec``."""
    return {
        "stack": stack,
        "target": spec.target.value,
        "platform": spec.name,
        "layers": {layer.value: {"owner": contract.owner, "promise": contract.promise}
                   for layer, contract in spec.layers.items()},
        "services": {name: {"layer": svc.layer.value, "owner": spec.owner_of(name), "enabled": svc.enabled}
                     for name, svc in spec.services.items()},
        "storage": {"bucket": spec.storage.bucket, "warehouse_prefixes": list(spec.storage.warehouse_prefixes)},
        "recovery": {"backup_retention_days": spec.recovery.backup_retention_days},
    }


def context_for_stack(stack: str, root: Path | None = None) -> dict[str, Any]:
    """The stack context read from ``Pulumi.<stack>.yaml`` of the project (``root``; validated like the program
    validates it)."""
    from lakehouse_platform.config import load_stack

    return stack_context(load_stack(stack, root), stack)


def context_from_config(stack: str, config: Mapping[str, str]) -> dict[str, Any]:
    """The stack context from the stack config as the engine passes it (key -> JSON/plain string)."""
    from lakehouse_platform.config import CONFIG_KEY, EXTENDS_KEY, extended, load_platform

    raw = config.get(CONFIG_KEY)
    value = json.loads(raw) if isinstance(raw, str) else raw
    source = f"Pulumi.{stack}.yaml"
    return stack_context(load_platform(extended(value, config.get(EXTENDS_KEY), source=source), source=source), stack)


def load_enforcement(path: Path = ENFORCEMENT_FILE) -> dict[str, dict[str, str]]:
    """``stack -> policy -> level`` from the enforcement file, checked against the pack's policies."""
    if not path.exists():
        return {}
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(document, dict):
        raise EnforcementError(f"{path.name}: must map stack -> policy -> level")
    errors: list[str] = []
    table: dict[str, dict[str, str]] = {}
    for stack, levels in document.items():
        if levels is None:
            table[str(stack)] = {}
            continue
        if not isinstance(levels, dict):
            errors.append(f"{path.name}: {stack}: must map policy -> level")
            continue
        for name, level in levels.items():
            if name not in POLICY_NAMES:
                errors.append(f"{path.name}: {stack}.{name}: unknown policy; known: {', '.join(POLICY_NAMES)}")
            elif level not in LEVELS:
                errors.append(f"{path.name}: {stack}.{name}: {level!r} is not a level; allowed: {', '.join(LEVELS)}")
        table[str(stack)] = {str(k): str(v) for k, v in levels.items()}
    if errors:
        raise EnforcementError("\n".join(errors))
    return table


def levels_for(stack: str | None, enforcement: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, str]:
    """Each policy's level on a stack: its default, then the file's ``"*"`` entry, then the stack's entry."""
    table = load_enforcement() if enforcement is None else enforcement
    levels = {p.name: p.level for p in POLICIES}
    levels.update(table.get(ALL_STACKS) or {})
    if stack:
        levels.update(table.get(stack) or {})
    return levels


def render_policy_config(stack: str, root: Path | None = None) -> dict[str, Any]:
    """``--policy-pack-config`` JSON for a stack: every policy's level, plus the stack context for each policy."""
    context = context_for_stack(stack, root)
    return {name: {"enforcementLevel": level, "context": context} for name, level in levels_for(stack).items()}


def context_of(config: Mapping[str, Any] | None) -> StackContext | None:
    """The stack context inside one policy's config (as rendered above), if any."""
    if config and isinstance(config.get("context"), Mapping):
        return StackContext.from_dict(config["context"])
    return None
