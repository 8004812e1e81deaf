"""A stack's state directory belongs to the stack that made it (lakehouse_platform/targets/state_owner.py): another
stack is refused naming the directory, its owner and the command that takes it over; the owner's record is written
when the stack deploys, and a disposable stack's directory goes with its destroy. Real files, the real provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse_platform.control import state
from lakehouse_platform.targets import state_owner
from lakehouse_platform.targets.lab_state import leftover
from lakehouse_platform.targets.state_owner import Identity, StateOwnerProvider, claim, recorded, refusal

FIRST = Identity("lakehouse-platform", "native", "file:///work/first/.pulumi-state")
SECOND = Identity("lakehouse-platform", "native", "file:///work/second/.pulumi-state")


def test_another_stack_of_the_same_name_is_refused_naming_the_directory_its_owner_and_the_claim(tmp_path):
    assert refusal(tmp_path, SECOND) is None  # no record: a directory from before records its owner at the next up
    claim(tmp_path, FIRST)
    assert refusal(tmp_path, FIRST) is None
    why = refusal(tmp_path, SECOND)
    assert why is not None
    assert str(tmp_path) in why and "file:///work/first/.pulumi-state" in why and "file:///work/second" in why
    assert "lakehouse claim --stack native" in why
    assert refusal(tmp_path, Identity("another-project", "native", FIRST.backend)) is not None


def test_claim_records_the_new_owner_and_says_whose_it_was(tmp_path):
    assert claim(tmp_path, FIRST) is None
    assert claim(tmp_path, SECOND) == FIRST
    assert recorded(tmp_path) == SECOND
    record = json.loads((tmp_path / state_owner.OWNER_FILE).read_text())
    assert record["backend"] == SECOND.backend and "recorded_at" in record


def test_a_file_backend_is_recorded_by_its_resolved_path(tmp_path):
    assert state_owner.normal_backend(f"file://{tmp_path}/x/../state/") == f"file://{tmp_path / 'state'}"
    assert state_owner.normal_backend("s3://bucket/prefix/") == "s3://bucket/prefix"


def _props(directory: Path, me: Identity, disposable: bool) -> dict[str, object]:
    return {"directory": str(directory), "project": me.project, "stack": me.stack, "backend": me.backend,
            "disposable": disposable}


def test_the_provider_records_at_create_refuses_a_record_of_another_and_removes_only_a_disposable_directory(tmp_path):
    provider = StateOwnerProvider()
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    provider.create(_props(mine, FIRST, disposable=True))
    assert recorded(mine) == FIRST
    claim(theirs, FIRST)
    with pytest.raises(RuntimeError, match="belongs to stack 'native'"):
        provider.create(_props(theirs, SECOND, disposable=False))
    (mine / "postgres").mkdir()
    provider.delete(str(mine), _props(mine, FIRST, disposable=True))
    assert not mine.exists(), "a disposable stack's directory goes with its destroy"
    provider.delete(str(theirs), _props(theirs, FIRST, disposable=False))
    assert recorded(theirs) == FIRST, "any other stack keeps its data and its owner"


def test_the_lab_state_takes_the_owners_record_for_no_leftover(tmp_path):
    claim(tmp_path, FIRST)
    assert leftover(tmp_path) == []
    (tmp_path / "catalog").mkdir()
    assert leftover(tmp_path) == ["catalog"]


def test_make_down_is_refused_for_a_directory_another_stack_owns(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKEHOUSE_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path / 'mine'}")
    directory = state.directory("native")
    assert directory == tmp_path / "native"
    state.check("native")  # nothing recorded yet
    claim(directory, Identity("lakehouse-platform", "native", f"file://{tmp_path / 'theirs'}"))
    with pytest.raises(state.NotTheOwner, match=r"theirs.*claim --stack native"):
        state.check("native")
    where, me, before = state.take_over("native")
    assert (where, me.backend, before is not None) == (directory, f"file://{tmp_path / 'mine'}", True)
    state.check("native")
