"""A stack deployed by 0.4.0 keeps every resource under the component: no URN of it is left without its resource.

Release 0.4.0's program (``infra/program.py`` at its commit; this repository's ``lakehouse_platform/program.py`` until the
component, the same URNs) put the seven layer components at the stack's root; ``__main__.py`` now makes them children of a
``LakehousePlatform``. Their alias (parent: the root stack) carries each layer to its old URN, and the engine carries
every child's along (a child's alias follows the alias its parent matched). ``data/urns-0.4.0.json`` is every URN
0.4.0's program registered for the test stacks (recorded from that program under the same mocks, in the engine's
format: each parent's whole qualified type); this test matches the program's registrations against it the way the
engine's step generator does (``generateAliases``, ``collapseAliasToUrn``, ``inheritedChildAlias`` in
pkg/resource/deploy/step_generator.go), so a preview of such a stack shows no create and no delete.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import REPO_ROOT
from tests.support.harness import Registration, cached_run, run_program
from tests.support.stacks import stack_platform

OLD = json.loads((Path(__file__).parent / "data" / "urns-0.4.0.json").read_text())
#: 0.4.0's program made of the package's parts (what tests/e2e/test_team_project.py deploys as a fork did).
FORK_PROGRAM = REPO_ROOT / "tests" / "e2e" / "data" / "fork" / "__main__.py"
ROOT = "pulumi:pulumi:Stack"


def qualified_type(urn: str) -> str:
    return urn.split("::")[2]


def make_urn(stack: str, project: str, parent: str, typ: str, name: str) -> str:
    qualified = f"{qualified_type(parent)}${typ}" if parent and qualified_type(parent) != ROOT else typ
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def matched(registrations: list[Registration], old: set[str]) -> dict[str, str]:
    """Each registration's URN -> the old URN it takes over (itself, or the first of its aliases that is old)."""
    aliased: dict[str, str] = {}  # the engine's sg.aliases: a resource -> the old URN it matched through an alias
    found: dict[str, str] = {}
    for reg in registrations:
        stack, project = reg.urn.split("::")[0].removeprefix("urn:pulumi:"), reg.urn.split("::")[1]

        def collapse(alias, reg=reg, stack=stack, project=project):  # collapseAliasToUrn
            if alias.urn:
                return alias.urn
            spec = alias.spec
            parent = spec.parentUrn or reg.parent
            if spec.parentUrn:
                # The mocks name a root-level parent with the stack's type in front; the engine does not.
                parent = parent.replace(f"::{ROOT}$", "::")
                parent = aliased.get(parent, parent)
            if spec.noParent:
                parent = ""
            return make_urn(spec.stack or stack, spec.project or project, parent, spec.type or reg.type,
                            spec.name or reg.name)

        candidates = [collapse(a) for a in reg.aliases]
        if reg.parent in aliased:  # generateAliases: the parent's matched alias, multiplied out
            parent_alias = aliased[reg.parent]
            parent_name = reg.parent.split("::")[-1]

            def inherited(typ: str, name: str, parent_alias=parent_alias, parent_name=parent_name,
                          stack=stack, project=project) -> str:
                alias_name = parent_alias.split("::")[-1] + name[len(parent_name):] \
                    if name.startswith(parent_name) else name
                return make_urn(stack, project, parent_alias, typ, alias_name)

            candidates.append(inherited(reg.type, reg.name))
            candidates += [inherited(qualified_type(c).split("$")[-1], c.split("::")[-1]) for c in list(candidates)]
        if reg.urn in old:
            found[reg.urn] = reg.urn
            continue
        for candidate in candidates:
            if candidate in old:
                found[reg.urn] = candidate
                aliased[reg.urn] = candidate
                break
    return found


#: The resources this release adds to a stack 0.4.0 deployed (a preview creates them; none replaces an old one): the
#: platform's component; natively and in the lab the state directory's owner record; on aws the catalog's jobs run
#: inside `up`, and the network's component (the aws kit's Network: its resources take their 0.4.0 URNs through
#: aliases).
ADDED = {"platform:index:LakehousePlatform", "pulumi-python:dynamic/state:StateOwner",
         "pulumi-python:dynamic/aws:EcsTaskRun", "platform:aws:Network"}
#: ... and by name: on aws the alarm on the replication slot's lag (steady state's disk bounds).
ADDED_NAMES = {"lakehouse-catalog-db-slot-lag"}


@pytest.mark.parametrize("stack", ["native", "lab", "cloud"])
def test_every_resource_of_a_stack_deployed_by_0_4_0_is_taken_over_by_the_component(stack):
    run = cached_run(stack, stack_platform(stack))
    old = set(OLD[stack])
    found = matched(run.registrations, old)
    new = [r for r in run.registrations if r.type not in ADDED and r.name not in ADDED_NAMES]
    print(f"\n== {stack}: {len(old)} URNs of 0.4.0, {len(new)} resources under the component, "
          f"{sum(1 for u, o in found.items() if u != o)} taken over through an alias, "
          f"{len(run.registrations) - len(new)} added ({', '.join(sorted({r.type for r in run.registrations} & ADDED))})")
    assert sorted(old - set(found.values())) == [], "0.4.0's resources no resource takes over (a preview deletes them)"
    assert [r.urn for r in new if r.urn not in found] == [], "resources 0.4.0 did not have (a preview creates them)"
    assert len(set(found.values())) == len(found), "two resources take over one old URN"


def test_the_platform_itself_is_the_only_new_resource_and_the_layers_are_its_children():
    run = cached_run("native", stack_platform("native"))
    platform = [r for r in run.registrations if r.type == "platform:index:LakehousePlatform"]
    assert [r.urn for r in platform] == ["urn:pulumi:native::lakehouse-platform::platform:index:LakehousePlatform"
                                         "::lakehouse"]
    layers = [r for r in run.registrations if r.type.startswith("platform:layers:")]
    assert len(layers) == 7 and {r.parent for r in layers} == {platform[0].urn}


@pytest.mark.parametrize("stack", ["native", "lab", "cloud"])
def test_the_e2e_tests_fork_program_registers_exactly_0_4_0s_urns(stack):
    """The stand-in for a fork's 0.4.0 program is 0.4.0's program: every URN the same, none more but the resources
    this release adds (its parts are this release's)."""
    run = run_program(stack, stack_platform(stack), program=FORK_PROGRAM)
    found = matched(run.registrations, set(OLD[stack]))  # 0.4.0's URN, or aliased to it (the aws network's)
    assert [r.urn for r in run.registrations
            if r.type not in ADDED and r.name not in ADDED_NAMES and r.urn not in found] == []
    assert sorted(found.values()) == OLD[stack]
    assert not any(r.type == "platform:index:LakehousePlatform" for r in run.registrations)
