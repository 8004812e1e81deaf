"""The ``lakehouse-contracts`` policy pack: the rules of ``lakehouse_platform/policies/rules/`` assembled for Pulumi.

    pulumi preview --stack lab --policy-pack lakehouse_platform/policies

stops a change that would break a layer's contract; each message names the resource, its layer,
its owner and the rule. This module only assembles the pack: the rules are plain functions in
``lakehouse_platform/policies/rules/<domain>.py`` (tested directly under Pulumi mocks),
``lakehouse_platform/policies/registry.py``
lists them, and ``lakehouse_platform/policies/engine.py`` wraps them for ``pulumi_policy`` (props as plain data with
secrets kept, the stack's contract, enforcement levels).
"""

from __future__ import annotations

PACK_NAME = "lakehouse-contracts"


def main() -> None:
    # The engine runs the pack as `python policies/` with the project's virtualenv (PulumiPolicy.yaml), where the
    # project is installed editable: lakehouse_platform.* and policies.* import from there, with no sys.path entry.
    from pulumi_policy import EnforcementLevel, PolicyPack

    from lakehouse_platform.policies.engine import STATE, build_policies, install_engine_hooks

    policies = build_policies(STATE["stack"])
    install_engine_hooks(policies)
    PolicyPack(
        name=PACK_NAME,
        policies=policies,
        enforcement_level=EnforcementLevel.MANDATORY,
        description="The lakehouse platform's layer contracts: ownership, storage, catalog, images, "
                    "runtime, secrets, credentials and recovery.",
    )


if __name__ == "__main__":
    main()
