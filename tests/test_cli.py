"""``lakehouse``: one command line, every subcommand described with its arguments' help, the version from the
installed metadata, secrets hidden unless asked, and the Pulumi project found where the user is (or ``-C``)."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lakehouse_platform.cli import parser, shown_outputs
from lakehouse_platform.control.isolated import FIXTURES
from tests.support import REPO_ROOT

LAKEHOUSE = Path(sys.executable).with_name("lakehouse")


def subcommands(top: argparse.ArgumentParser, path: str = "lakehouse") -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command's parser by its command line, recursively."""
    found = {path: top}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(subcommands(sub, f"{path} {name}"))
    return found


def test_every_subcommand_has_a_description_and_every_argument_its_help():
    found = subcommands(parser())
    assert len(found) == 25  # lakehouse, its 21 commands, lab's 3
    undescribed = [cmd for cmd, p in found.items() if not p.description]
    unhelped = [f"{cmd} {a.option_strings or a.dest}" for cmd, p in found.items() for a in p._actions
                if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS and not a.help
                and not isinstance(a, argparse._SubParsersAction)]
    assert undescribed == [] and unhelped == []
    top = parser()
    listed = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    assert all(choice.help for choice in listed._choices_actions), "each command's line in `lakehouse --help`"
    for command in ("up", "down", "outputs", "verify", "review", "policy-pack", "stop", "start", "restart",
                    "maintenance", "recovery", "lab", "engine", "env", "pulumi", "artifacts"):
        assert f"lakehouse {command}" in found


def test_the_actions_offer_their_choices():
    found = subcommands(parser())
    choices = {cmd: {a.dest: a.choices for a in p._actions if a.choices and not isinstance(
        a, argparse._SubParsersAction)} for cmd, p in found.items()}
    assert choices["lakehouse engine"]["action"] == ("start", "stop", "status", "env")
    assert choices["lakehouse recovery"]["action"] == ("backup", "list", "restore", "rebuild", "restore-postgres")
    assert choices["lakehouse review"]["format"] == ("table", "json", "markdown", "svg")


def test_the_version_is_the_installed_metadatas():
    done = subprocess.run([str(LAKEHOUSE), "--version"], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == f"lakehouse {importlib.metadata.version('lakehouse-platform')}"


def test_outputs_hide_every_secret_unless_asked():
    found = {"endpoints": ({"trino": {"http": {"external": "127.0.0.1:8080"}}}, False),
             "credentials": ({"s3_secret_key": "hunter2"}, True), "stack": ("dev", False)}
    hidden = shown_outputs(found, show_secrets=False)
    assert hidden == {"endpoints": found["endpoints"][0], "credentials": "[secret]", "stack": "dev"}
    assert "hunter2" not in json.dumps(hidden)
    assert shown_outputs(found, show_secrets=True)["credentials"] == {"s3_secret_key": "hunter2"}


def test_the_project_is_the_working_directorys_or_the_one_named(tmp_path):
    """Stack files come from the Pulumi project where the user is, or -C DIR: never from where the package is."""
    outside = subprocess.run([str(LAKEHOUSE), "review", "--stack", "native"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120, check=False)
    assert outside.returncode == 2 and "Traceback" not in outside.stderr
    assert f"no Pulumi.yaml in {tmp_path} or any directory above it" in outside.stderr and "-C DIR" in outside.stderr
    named = subprocess.run([str(LAKEHOUSE), "-C", str(FIXTURES), "review", "--stack", "native", "--format", "json"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(named.stdout)["stack"] == "native"
    within = subprocess.run([str(LAKEHOUSE), "review", "--stack", "lab", "--format", "json"],
                            cwd=FIXTURES, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(within.stdout)["target"] == "docker"
    team = REPO_ROOT / "examples" / "team-project"
    theirs = subprocess.run([str(LAKEHOUSE), "review", "--stack", "dev", "--format", "json"], cwd=team,
                            capture_output=True, text=True, timeout=120, check=True)
    assert [t["table"] for t in json.loads(theirs.stdout)["tables"]] == ["web.page_views", "web.sessions"]


@pytest.mark.parametrize("argv,said", [(["up"], "--stack"), (["lab", "images"], "build"),
                                       (["engine", "restart"], "invalid choice")])
def test_bad_arguments_are_refused_naming_what_is_allowed(argv, said, capsys):
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(argv)
    assert exited.value.code == 2 and said in capsys.readouterr().err
