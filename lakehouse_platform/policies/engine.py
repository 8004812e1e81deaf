"""What stands between the Pulumi engine and the rules: props as plain data, the stack's contract, levels.

Decisions
---------
Where the stack's contract comes from
    The ownership table and the recovery promise are stack config (``lakehouse:platform``), which
    a policy's ``args`` do not expose. The pack takes them, in this order, from:

    1. policy config: a ``context`` property rendered from ``Pulumi.<stack>.yaml`` by
       ``lakehouse policy-pack --config <stack>`` and passed with ``--policy-pack-config`` (works with
       any engine; explicit wins);
    2. the stack config the engine itself hands to policy packs: the decrypted stack config
       arrives in the analyzer's ``ConfigureStack`` call (language-host path, which
       ``pulumi_policy`` 1.21 drops: a small wrapper below keeps it) or in ``PULUMI_CONFIG`` /
       ``PULUMI_STACK`` (legacy ``pulumi-analyzer-policy-python`` path). It is validated with the
       program's own loader (``lakehouse_platform.model.load_platform``), so the pack and the program can never
       disagree about the contract.

    Labels are *checked* against that table, never trusted as the table. Without either source
    the ownership and recovery rules report that they could not check (instead of passing).

Secret config
    The same two engine paths name the stack's secret config keys (``config_secret_keys``,
    ``PULUMI_CONFIG_SECRET_KEYS``). Their values are attached to the stack context in memory only
    (``StackContext.secrets``, never rendered or printed) so ``secret-values-not-plaintext`` can
    find a copy of them in plain text. ``--policy-pack-config`` never carries secrets.

Enforcement levels
    ``lakehouse_platform/policies/enforcement.yaml`` (stack -> policy -> advisory|mandatory|disabled, ``"*"`` for all
    stacks; default mandatory, the digest advice advisory). The stack name is known at start-up
    (``PULUMI_STACK``) or from ``ConfigureStack``, which the engine calls before it asks the pack
    for its policies, so the levels it reports are the stack's. ``--policy-pack-config`` and
    ``pulumi policy config`` still override them per policy.

Secrets in props
    The engine sends secrets wrapped (``KeepSecrets``), but ``pulumi_policy`` unwraps them before a
    policy sees the props, which would make every secret look like plain text. The pack keeps the
    wrapper (Pulumi's wire form ``{SIG_KEY: SECRET_SIG, "value": ...}``, the same form the mocks
    record), so the secrets rules can tell a secret from a plain string. Unknown values (preview)
    stay sentinel strings; the rules never count an unknown as a violation.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import deserialize as _sdk_deserialize
from pulumi_policy import policy as _sdk_policy
from pulumi_policy.proxy import _DictProxy, _ListProxy
from pulumi_policy.secret import Secret, _DictSecretsProxy, _ListSecretsProxy

from lakehouse_platform.config import ConfigError
from lakehouse_platform.policies import config as pack_config
from lakehouse_platform.policies.registry import POLICIES
from lakehouse_platform.policies.resources import PolicyDef, Resource, StackContext
from lakehouse_platform.policies.wire import SECRET_SIG, SIG_KEY, plain_strings


def _json_env(name: str) -> Any:
    try:
        return json.loads(os.environ[name]) if os.environ.get(name) else None
    except ValueError:
        return None


# What the engine told us about the stack (see "Where the stack's contract comes from").
STATE: dict[str, Any] = {
    "stack": os.environ.get("PULUMI_STACK") or None,
    "config": _json_env("PULUMI_CONFIG"),
    "secret_keys": _json_env("PULUMI_CONFIG_SECRET_KEYS") or [],
    "context": None,
    "context_error": None,
}

# --------------------------------------------------------------------------------------------
# Props as plain data
# --------------------------------------------------------------------------------------------


def _keep_secrets(prop: Any) -> Any:
    """Deserialize one wire value, keeping secrets in their wire form instead of unwrapping them."""
    if isinstance(prop, list):
        return [_keep_secrets(e) for e in prop]
    if isinstance(prop, dict):
        if prop.get(SIG_KEY) == SECRET_SIG:
            return {SIG_KEY: SECRET_SIG, "value": _keep_secrets(prop.get("value"))}
        if SIG_KEY in prop:  # assets and archives
            return _sdk_deserialize._deserialize_property(prop)
        return {k: _keep_secrets(v) for k, v in prop.items()}
    return prop


def deserialize_keeping_secrets(props: dict[str, Any], proxy_secrets: bool = False) -> dict[str, Any]:
    """Drop-in for ``pulumi_policy``'s ``deserialize_properties`` that leaves secrets recognisable."""
    return {k: _keep_secrets(v) for k, v in props.items()}


def plain(value: Any) -> Any:
    """Plain dicts/lists from the SDK's proxies, without tripping over unknown values."""
    if isinstance(value, (_DictProxy, _ListProxy, _DictSecretsProxy, _ListSecretsProxy)):
        value = value["__target"]  # the raw container: reading it raises nothing
    if isinstance(value, Secret):
        return {SIG_KEY: SECRET_SIG, "value": plain(value.value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# Stack context and levels
# --------------------------------------------------------------------------------------------


def secret_config(config: Mapping[str, Any] | None, secret_keys: list[str]) -> dict[str, str]:
    """key -> value of the stack's secret config (a structured value gives one entry per string in it)."""
    out: dict[str, str] = {}
    for key in secret_keys:
        raw = (config or {}).get(key)
        if not isinstance(raw, str):
            continue
        document = None
        if raw.lstrip()[:1] in ("{", "["):
            try:
                document = json.loads(raw)
            except ValueError:
                document = None
        if isinstance(document, (dict, list)):
            out.update({path: text for path, text in plain_strings(document, key)})
        else:
            out[key] = raw
    return out


def stack_context(policy_config: Mapping[str, Any] | None) -> StackContext | None:
    """The stack's contract: from policy config if given, else from the stack config the engine passed."""
    context = pack_config.context_of(policy_config)
    if context is None:
        if STATE["context"] is None and STATE["config"] and STATE["context_error"] is None:
            try:
                STATE["context"] = StackContext.from_dict(
                    pack_config.context_from_config(STATE["stack"] or "", STATE["config"]))
            except (ConfigError, ValueError, TypeError, KeyError) as exc:  # the program stops on it too; say why
                STATE["context_error"] = str(exc)
        context = STATE["context"]
    secrets = secret_config(STATE["config"], list(STATE["secret_keys"] or []))
    if context is not None and secrets:
        context = dataclasses.replace(context, secrets=secrets)
    return context


def apply_levels(policies: list[Any], stack: str | None) -> None:
    """Set each policy's level for the stack (enforcement.yaml)."""
    levels = pack_config.levels_for(stack)
    for p in policies:
        p.enforcement_level = EnforcementLevel(levels[p.name])


# --------------------------------------------------------------------------------------------
# Wrappers
# --------------------------------------------------------------------------------------------


def _resource_of(args: ResourceValidationArgs) -> Resource:
    return Resource(
        type=args.resource_type,
        name=args.name,
        props=plain(args.props),
        urn=args.urn,
        parent=getattr(args.opts, "parent", None) or None,
        provider=plain(args.provider.props) if args.provider is not None else None,
    )


def _stack_resources(args: StackValidationArgs) -> list[Resource]:
    return [
        Resource(
            type=r.resource_type,
            name=r.name,
            props=plain(r.props),
            urn=r.urn,
            parent=r.parent.urn if r.parent is not None else None,
            provider=plain(r.provider.props) if r.provider is not None else None,
            deps={k: [d.urn for d in v] for k, v in (r.property_dependencies or {}).items()},
        )
        for r in args.resources
    ]


def resource_validation(defn: PolicyDef) -> Callable[[ResourceValidationArgs, Callable[..., None]], None]:
    def validate(args: ResourceValidationArgs, report_violation: Callable[..., None]) -> None:
        for violation in defn.check(_resource_of(args), stack_context(args.get_config())):
            report_violation(str(violation))

    return validate


def stack_validation(defn: PolicyDef) -> Callable[[StackValidationArgs, Callable[..., None]], None]:
    def validate(args: StackValidationArgs, report_violation: Callable[..., None]) -> None:
        for violation in defn.check(_stack_resources(args), stack_context(args.get_config())):
            report_violation(str(violation), getattr(violation, "urn", None))

    return validate


CONFIG_SCHEMA = PolicyConfigSchema(properties={
    "context": {
        "type": "object",
        "description": "The stack's contract (ownership table, warehouse prefixes, recovery promise), "
                       "rendered by `lakehouse policy-pack --config <stack>`; default: read from "
                       "the stack config.",
    },
})


def build_policies(stack: str | None = None) -> list[Any]:
    """The pack's policies, at the stack's enforcement levels."""
    policies: list[Any] = []
    for defn in POLICIES:
        if defn.scope == "stack":
            policies.append(StackValidationPolicy(name=defn.name, description=defn.description,
                                                  validate=stack_validation(defn), config_schema=CONFIG_SCHEMA))
        else:
            policies.append(ResourceValidationPolicy(name=defn.name, description=defn.description,
                                                     validate=resource_validation(defn), config_schema=CONFIG_SCHEMA))
    apply_levels(policies, stack)
    return policies


def install_engine_hooks(policies: list[Any]) -> None:
    """Keep secrets wrapped, and take the stack name, config and secret keys from ``ConfigureStack``."""
    _sdk_policy.deserialize_properties = deserialize_keeping_secrets
    servicer = _sdk_policy._PolicyAnalyzerServicer
    original = servicer.ConfigureStack
    if getattr(original, "_lakehouse_hook", False):
        return

    def configure_stack(self: Any, request: Any, context: Any) -> Any:
        STATE["stack"] = request.stack or STATE["stack"]
        if request.config:
            STATE["config"] = dict(request.config)
            STATE["secret_keys"] = list(getattr(request, "config_secret_keys", []) or [])
            STATE["context"] = None
            STATE["context_error"] = None
        apply_levels(policies, STATE["stack"])
        return original(self, request, context)

    configure_stack._lakehouse_hook = True  # type: ignore[attr-defined]
    servicer.ConfigureStack = configure_stack  # type: ignore[method-assign, assignment]
