"""The example team project (examples/team-project) evaluated under Pulumi mocks, as its own program with its own
stack files: the platform it declares on each target, named after it, with its own tables and identities, and
nothing the policy pack refuses. Its native stack is deployed for real, from the installed wheel, by
tests/e2e/test_team_project.py."""

from __future__ import annotations

import json

import pytest

from lakehouse_platform.config import stack_platform
from lakehouse_platform.policies.config import context_from_config
from lakehouse_platform.policies.registry import POLICIES, run_policy
from lakehouse_platform.policies.resources import StackContext
from tests.support import REPO_ROOT
from tests.support.harness import ProgramRun, cached_run, run_program
from tests.support.policy_support import to_resources

PROJECT = REPO_ROOT / "examples" / "team-project"
PROGRAM = PROJECT / "__main__.py"
NAME = "analytics-lakehouse"  # its Pulumi.yaml's


def evaluated(stack: str) -> ProgramRun:
    return run_program(stack, stack_platform(stack, PROJECT), program=PROGRAM, project=NAME)


@pytest.fixture(scope="module", params=["dev", "lab", "cloud"])
def run(request: pytest.FixtureRequest) -> tuple[str, ProgramRun]:
    return request.param, evaluated(request.param)


def test_its_program_declares_one_platform_named_after_it_on_each_target(run):
    stack, done = run
    (platform,) = done.platforms.values()
    assert platform._name == "analytics" and platform.spec.name == "analytics"
    assert done.outputs["platform"] == "analytics" and done.outputs["stack"] == stack
    assert done.outputs["target"] == {"dev": "native", "lab": "docker", "cloud": "aws"}[stack]
    children = [r for r in done.registrations if r.type != "platform:index:LakehousePlatform"]
    assert children and all(r.name.startswith("analytics-") for r in children)
    assert all(r.urn.startswith(f"urn:pulumi:{stack}::{NAME}::platform:index:LakehousePlatform$") for r in children)
    print(f"\n== {stack}: {len(children)} resources under LakehousePlatform 'analytics'")


def test_its_own_tables_and_identities_are_the_platforms(run):
    stack, done = run
    assert "web.page_views" in [table["table"] for table in done.outputs["tables"]]
    assert {t["owner"] for t in done.outputs["tables"]} == {"web analytics"}
    if stack != "cloud":
        assert done.outputs["grants"]["analyst"] == {"web": ["read"], "*": []}  # its own identity, its grants


def test_the_policy_pack_passes_it(run):
    """As the engine hands the pack the stack: its config (which names no platform: the component does) and its
    resources, the platform's component among them."""
    stack, done = run
    config = {"lakehouse:platform": json.dumps(stack_platform(stack, PROJECT))}
    context = StackContext.from_dict(context_from_config(stack, config))
    resources = to_resources(done.resources, stack)
    found = [str(v) for p in POLICIES if p.level == "mandatory" for v in run_policy(p, resources, context)]
    assert found == []


def test_a_config_that_names_the_platform_otherwise_is_refused_before_any_resource():
    import pulumi

    from tests.support.harness import RecordingMocks

    mocks = RecordingMocks()
    platform = {**stack_platform("dev", PROJECT), "name": "marketing"}
    with pytest.raises(pulumi.RunError, match=r"its config names the platform 'marketing' \(lakehouse:platform.name\)"):
        run_program("dev", platform, mocks=mocks, program=PROGRAM, project=NAME)
    assert mocks.resources == []


def test_cached_runs_of_the_repository_are_not_the_teams():
    """The harness keys its cache by stack and config: the team's runs never stand in for this repository's."""
    assert cached_run is not None and evaluated("dev").outputs["platform"] != "lakehouse"
