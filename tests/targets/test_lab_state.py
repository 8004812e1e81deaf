"""The lab's lifecycle on a real engine's terms (issue 19): what `destroy` keeps (nothing of the stack), a half-kept
state refused before any container, and fixed names replaced delete-first (a job's `pulumi up --replace`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehouse_platform.targets.lab_state import MARKER, HalfKeptState, claim, release

FIXED_NAMES = ("docker:index/container:Container", "docker:index/volume:Volume", "docker:index/network:Network")


def test_every_container_waits_for_the_stacks_state_and_fixed_names_are_replaced_delete_first(lab_run):
    (state,) = lab_run.of_type("pulumi-python:dynamic/lab:LabState")
    assert state.inputs["directory"].endswith("/lab") and state.inputs["stack"] == "lab"
    containers = lab_run.of_type("docker:index/container:Container")
    assert containers and all("book2-lab-state" in c.depends_on for c in containers), \
        [c.name for c in containers if "book2-lab-state" not in c.depends_on]
    fixed = [r for r in lab_run.resources if r.type in FIXED_NAMES]
    assert len(fixed) > len(containers) and all(r.delete_before_replace for r in fixed), \
        [r.name for r in fixed if not r.delete_before_replace]


def test_a_first_up_claims_the_directory_and_destroy_removes_it(tmp_path: Path):
    state = tmp_path / "lab"
    claim(state, "lab")
    assert (state / MARKER).read_text() == "lab\n"
    (state / "rest-fixture" / "catalog").mkdir(parents=True)
    (state / "rest-fixture" / "catalog" / "fixture.db").write_text("pointers")
    release(state)
    assert not state.exists()
    release(state)  # a second destroy finds nothing to remove


def test_a_half_kept_state_is_refused_naming_the_directory_and_kept(tmp_path: Path):
    state = tmp_path / "lab"
    (state / "flink" / "state" / "savepoints").mkdir(parents=True)
    with pytest.raises(HalfKeptState) as refused:
        claim(state, "lab")
    message = str(refused.value)
    assert str(state) in message and "flink" in message and f"rm -rf {state}" in message
    assert (state / "flink" / "state" / "savepoints").is_dir(), "nothing is deleted without the operator"


def test_a_new_directory_is_an_update_that_moves_the_data_and_never_one_that_holds_data(tmp_path: Path):
    """The lab upgraded by hand from 0.3.0 (its state in the checkout) lost every table's catalog: the directory's
    move was a replacement, whose delete removed the fixture's SQLite, the savepoints and the backups."""
    from lakehouse_platform.targets.lab_state import LabStateProvider

    provider = LabStateProvider()
    old, new = tmp_path / "checkout" / ".state" / "lab", tmp_path / "var" / "lab"
    olds = provider.create({"directory": str(old), "stack": "lab"}).outs
    (old / "rest-fixture" / "catalog").mkdir(parents=True)
    (old / "rest-fixture" / "catalog" / "fixture.db").write_text("pointers")
    news = {"directory": str(new), "stack": "lab"}
    diff = provider.diff(str(old), olds, news)
    assert diff.changes and not diff.replaces
    provider.update(str(old), olds, news)
    assert not old.exists() and (new / "rest-fixture" / "catalog" / "fixture.db").read_text() == "pointers"
    assert (new / MARKER).read_text() == "lab\n"

    other = tmp_path / "elsewhere"
    (other / "flink").mkdir(parents=True)
    with pytest.raises(Exception, match="already holds data"):
        provider.update(str(new), news, {"directory": str(other), "stack": "lab"})
    assert (new / "rest-fixture" / "catalog" / "fixture.db").is_file(), "nothing moved onto data, nothing lost"
