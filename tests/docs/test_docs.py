"""The front door and the CD example stay true to this repository.

The README is short and its links lead somewhere; the CD workflow a team copies runs in the team's repository
(examples/team-project's shape) only commands the package's console script has, with the policy pack and the
probes the package ships, and installs the provider plugins at the versions pyproject.toml pins. actionlint (``make lint``) checks the
workflow's syntax and expressions; ``make docs`` checks the site's links.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from lakehouse_platform.paths import PACKAGE_DIR
from tests.support import REPO_ROOT

WORKFLOW = REPO_ROOT / "examples" / "github-actions" / "lakehouse-cd.yml"
TEAM_PROJECT = REPO_ROOT / "examples" / "team-project"
README = REPO_ROOT / "README.md"


def _workflow() -> dict[str, Any]:
    document: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as true
    return document


def _steps() -> list[dict[str, Any]]:
    return [step for job in _workflow()["jobs"].values() for step in job["steps"]]


def _scripts() -> str:
    return "\n".join(step["run"] for step in _steps() if "run" in step)


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*):", (REPO_ROOT / "Makefile").read_text(), re.MULTILINE))


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc gives a heading (code spans and punctuation dropped)."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[\s-]+", "-", text)


def test_readme_is_a_front_door_with_the_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for command in ("make up", "make test", "make down"):
        assert command in text


def test_readme_links_lead_to_files_and_headings_that_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", README.read_text())
    assert links
    for target, anchor in links:
        if re.match(r"[a-z]+://", target):
            continue
        path = REPO_ROOT / target
        assert path.is_file(), f"README links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+?)\s*$", path.read_text(), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, f"{target} has no heading for #{anchor}"


def test_the_workflow_deploys_a_teams_stacks_from_its_own_project():
    """It runs in a team's repository (examples/team-project's shape): the package from its requirements pin, every
    command its console script, nothing of this checkout (no make target, script or module path of it)."""
    matrix = _workflow()["jobs"]["deploy"]["strategy"]["matrix"]["include"]
    assert {entry["stack"] for entry in matrix} == {"lab", "cloud"}
    for entry in matrix:
        assert (TEAM_PROJECT / f"Pulumi.{entry['stack']}.yaml").is_file()
    scripts = _scripts()
    assert ".venv/bin/pip install -r requirements.txt" in scripts and (TEAM_PROJECT / "requirements.txt").is_file()
    assert not re.search(r"\bmake |scripts/|lakehouse_platform/|python -m lakehouse_platform", scripts)


def test_the_provider_plugins_are_the_versions_pyproject_pins():
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    for entry in _workflow()["jobs"]["deploy"]["strategy"]["matrix"]["include"]:
        pinned = re.search(rf'"pulumi-{entry["provider"]}==([0-9.]+)"', pyproject)
        assert pinned, f"pyproject.toml pins no pulumi-{entry['provider']}"
        assert entry["provider-version"] == pinned.group(1), entry["stack"]


def test_every_lakehouse_command_the_workflow_runs_is_one_the_console_script_has():
    from lakehouse_platform.cli import parser

    used = set(re.findall(r"(?:^|[\s(\"])(?:\.venv/bin/)?lakehouse ([a-z][a-z-]*)", _scripts(), re.MULTILINE))
    commands = set(next(a for a in parser()._actions if a.dest == "command").choices)  # type: ignore[arg-type]
    assert {"env", "policy-pack", "verify", "review", "artifacts", "pulumi"} <= used
    assert used <= commands, f"not lakehouse commands: {sorted(used - commands)}"


def test_the_policy_pack_and_the_probes_the_workflow_runs_are_the_packages():
    scripts = _scripts()
    assert '--policy-pack "$(lakehouse policy-pack)"' in scripts
    assert (PACKAGE_DIR / "policies" / "PulumiPolicy.yaml").is_file()
    assert 'lakehouse verify --stack "$STACK" --junit' in scripts
    assert (PACKAGE_DIR / "probes" / "conftest.py").is_file()


def test_the_stack_outputs_the_workflow_reads_are_ones_the_program_exports():
    read = set(re.findall(r"\.(\w+_jobs) //", _scripts()))
    assert read == {"catalog_jobs", "streams_jobs"}
    sources = "\n".join(p.read_text() for p in (REPO_ROOT / "lakehouse_platform").rglob("*.py"))
    for output in read:
        assert f'"{output}"' in sources, output


def test_the_workflow_runs_pulumis_own_release_in_the_supported_range_and_builds_no_go():
    from lakehouse_platform.control import toolchain

    steps = _steps()
    assert not any(step.get("uses", "").startswith("actions/setup-go") for step in steps)
    (install,) = [step for step in steps if step.get("uses", "").startswith("pulumi/actions@")]
    version = toolchain.parse_version(str(install["with"]["pulumi-version"]))
    low, high = toolchain.supported_range()
    assert version is not None and low <= version < high
    assert _workflow()["jobs"]["deploy"]["env"]["LAKEHOUSE_PULUMI"] == "installed"  # an error, never a Go build


def test_the_workflow_posts_the_change_review_on_pull_requests_and_gates_on_its_exit_code():
    (step,) = [s for s in _steps() if "lakehouse review --base" in s.get("run", "")]
    assert step["if"] == "env.PR != ''"
    script = step["run"]
    assert '--approved-by "$approved_by"' in script and "--format markdown" in script
    assert "verdict=$?" in script and script.rstrip().endswith('exit "$verdict"')
    assert 'lakehouse review --stack "$STACK" --handles' in script
    events = _workflow()["on"]
    assert "pull_request" in events and "pull_request_review" in events
    assert _workflow()["jobs"]["deploy"]["env"]["DEPLOY"] == (
        "${{ github.event_name == 'push' || github.event_name == 'workflow_dispatch' }}")  # a review never deploys


def test_the_workflow_probes_the_cloud_with_the_safe_set_and_the_ephemeral_lab_with_everything():
    """Which probes run is each stack's config (its ``disposable`` output), never a flag in the pipeline: the cloud,
    which a team relies on, gets the safe set; the lab it destroys at the end gets every probe (issue 24)."""
    from lakehouse_platform.config import load_stack

    probes = [step["run"] for step in _steps() if "lakehouse verify" in step.get("run", "")]
    assert len(probes) == 1
    assert "--disruptive" not in probes[0] and " -m " not in probes[0]
    stacks = {entry["stack"]: entry for entry in _workflow()["jobs"]["deploy"]["strategy"]["matrix"]["include"]}
    assert load_stack("cloud", TEAM_PROJECT).disposable is False and stacks["cloud"]["ephemeral"] is False
    assert load_stack("lab", TEAM_PROJECT).disposable is True and stacks["lab"]["ephemeral"] is True
