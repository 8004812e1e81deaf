"""Which probes run where (issue 24, item 3): the safe set on any stack, the disruptive probes only where allowed.

The probe suite is collected and run for real (pytest in a subprocess against an outputs file): every probe says
whether it is safe or disruptive, the disruptive ones are exactly the issue's families, and against a stack that is
not disposable each of them skips before any fixture touches the stack, saying why; ``--disruptive`` naming another
stack ends the run before any probe. That the safe set leaves nothing behind on a real stack:
``tests/e2e/test_team_project.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from lakehouse_platform.probes.support import selection
from tests.support import REPO_ROOT

#: The disruptive probes: faults, restarts, the recovery drill, commit storms, maintenance runs, changes to a source
#: database, alerts made to fire (each module's probes, or the named ones).
DISRUPTIVE = {
    "test_catalog_concurrency.py": "*", "test_cdc.py": "*", "test_restart.py": "*", "test_faults.py": "*",
    "test_maintenance.py": {"test_maintenance_runs_and_is_safe"},
    "test_recovery.py": {"test_drill_restore_from_the_latest_backup", "test_drill_rebuild_from_storage_without_a_backup"},
    "test_signals.py": "*",
}


def probes(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "lakehouse_platform/probes", "-p", "no:cacheprovider", *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)


# The probe suite collected once (pytest in a subprocess), each probe with the names of its marks.
COLLECT = (
    "import json, sys, pytest\n"
    "class Marks:\n"
    "    found = {}\n"
    "    def pytest_collection_finish(self, session):\n"
    "        for item in session.items:\n"
    "            Marks.found.setdefault(item.nodeid.split('[')[0], set()).update(m.name for m in item.iter_markers())\n"
    "code = pytest.main(['lakehouse_platform/probes', '-p', 'no:cacheprovider', '--collect-only', '-q'],"
    " plugins=[Marks()])\n"
    "print(json.dumps({probe: sorted(marks) for probe, marks in Marks.found.items()}))\n"
    "sys.exit(code)\n"
)


@pytest.fixture(scope="module")
def marks() -> dict[str, set[str]]:
    """Every probe of the suite (``path::name``, parameters aside) with the names of its marks."""
    done = subprocess.run([sys.executable, "-c", COLLECT], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {probe: set(names) for probe, names in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def collected(marks: dict[str, set[str]], *, safe: bool | None = None, disruptive: bool | None = None) -> set[str]:
    """The probes whose ``safe`` and ``disruptive`` marks are as asked (None: either)."""
    return {probe for probe, names in marks.items()
            if (safe is None or ("safe" in names) == safe) and (disruptive is None or ("disruptive" in names) == disruptive)}


@pytest.fixture(scope="module")
def outputs_file(tmp_path_factory) -> Path:
    """Outputs of a stack someone relies on (not disposable), with endpoints nothing answers at."""
    path = tmp_path_factory.mktemp("outputs") / "outputs.json"
    path.write_text(json.dumps({
        "stack": "prod", "disposable": False, "target": "native", "endpoints": {"x": {"y": {"internal": "127.0.0.1:1"}}},
        "profiles": {"host": {}}, "version_manifest": {"x": "1"}, "ownership": [{"layer": "catalog"}]}))
    return path


def test_every_probe_says_whether_it_is_safe_and_the_disruptive_ones_are_the_issues(marks):
    safe, disruptive = collected(marks, safe=True), collected(marks, disruptive=True)
    assert collected(marks, safe=False, disruptive=False) == set()
    assert safe and not safe & disruptive
    expected = {p for p in safe | disruptive
                if DISRUPTIVE.get(p.split("::")[0].split("/")[-1]) in ("*",)
                or p.split("::")[-1] in (DISRUPTIVE.get(p.split("::")[0].split("/")[-1]) or ())}
    assert disruptive == expected
    assert {"test_engines.py::test_four_engines_one_catalog_one_table",
            "test_recovery.py::test_backups_run_on_schedule_checksummed_within_the_recovery_point",
            "test_signals_read.py::test_signals_and_alerts_are_current_and_agree_with_the_tables",
            "test_manifest.py::test_version_manifest_matches_the_pins"} <= safe


def test_against_a_stack_not_marked_disposable_every_disruptive_probe_skips_saying_why(outputs_file, tmp_path, marks):
    import xml.etree.ElementTree as ET

    report = tmp_path / "probes.xml"
    done = probes("--outputs", str(outputs_file), "-m", "disruptive", "-q", f"--junitxml={report}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    junit = ET.parse(report)  # noqa: S314 - our own pytest's JUnit file
    cases = {f"{c.get('classname')}.{c.get('name')}": c.find("skipped") for c in junit.iter("testcase")}
    assert len(cases) == len(collected(marks, disruptive=True)) and all(skip is not None for skip in cases.values())
    reasons = {name: skip.get("message", "") for name, skip in cases.items()}
    why = "stack prod is not marked disposable (lakehouse:platform.disposable: true), and --disruptive=prod was not"
    assert all(r.startswith("disruptive: ") and why in r for r in reasons.values()), reasons
    kill = reasons["test_faults.test_kill_9_of_the_catalog_mid_commit_loses_no_acknowledged_commit"]
    assert kill.startswith("disruptive: SIGKILLs the catalog while 4 writers commit; stack prod")
    assert "disruptive probes skipped: stack prod is not marked disposable" in done.stdout


def test_a_disruptive_flag_naming_another_stack_is_refused_before_any_probe(outputs_file):
    done = probes("--outputs", str(outputs_file), "--disruptive=staging", "-q")
    assert done.returncode == 4, done.stdout[-3000:] + done.stderr[-2000:]
    said = done.stdout + done.stderr
    assert "--disruptive=staging refused: these outputs are stack prod's, not staging's" in said
    assert " passed" not in said and " failed" not in said


def test_what_the_outputs_and_the_flag_allow():
    prod, lab = {"stack": "prod", "disposable": False}, {"stack": "lab", "disposable": True}
    assert not selection.disruption(prod, None).allowed
    assert selection.disruption(lab, None).allowed
    assert selection.disruption(prod, "prod").allowed
    with pytest.raises(selection.RefusedFlag, match="these outputs name no stack"):
        selection.disruption({"disposable": True}, "lab")
    assert not selection.disruption({"disposable": "true"}, None).allowed  # only a real true counts


def test_a_probe_that_says_nothing_counts_as_disruptive():
    def mark(name: str, *args: str) -> SimpleNamespace:
        return SimpleNamespace(name=name, args=args)

    unsafe = selection.Disruption(False, "prod", "stack prod is not marked disposable")
    assert selection.skip_reason(selection.kind_of([mark("catalog")]), unsafe) == (
        "disruptive: it is not marked safe (a probe is disruptive unless it says otherwise); stack prod is not "
        "marked disposable")
    assert selection.skip_reason(selection.kind_of([mark("safe")]), unsafe) is None
    assert selection.kind_of([mark("safe"), mark("disruptive", "restarts")]) == selection.Kind(False, "restarts")
