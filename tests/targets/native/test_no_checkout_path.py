"""No path of the checkout in what a native stack records (its resources' inputs, its outputs), nor in the lab's
dynamic resources: a stack deployed from one checkout is refreshed and destroyed from any other (issue 25).

The real deploy's exported state is grepped by the e2e tier (tests/e2e/test_moved_checkout.py); here the
program under mocks, where every path the program computes is visible.
"""

from __future__ import annotations

import json

from tests.support import REPO_ROOT
from tests.support.harness import ProgramRun


def _where(run: ProgramRun, only_dynamic: bool = False) -> list[str]:
    found = []
    for resource in run.resources:
        if only_dynamic and not resource.type.startswith("pulumi-python:dynamic"):
            continue
        if str(REPO_ROOT) in json.dumps(resource.inputs, default=str):
            found.append(f"{resource.type}::{resource.name}")
    return found


def test_the_native_program_records_no_path_of_the_checkout(native_run: ProgramRun) -> None:
    assert _where(native_run) == []
    assert str(REPO_ROOT) not in json.dumps(native_run.outputs, default=str)


def test_the_labs_dynamic_resources_record_no_path_of_the_checkout(lab_run: ProgramRun) -> None:
    assert _where(lab_run, only_dynamic=True) == []
