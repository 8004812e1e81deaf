"""A fresh clone's first commands with the project's Pulumi CLI (issue 35): ``. scripts/pulumi-env.sh`` (``lakehouse
env --shell``) makes the project's backend directory and its docker and native stacks,
so a plain ``pulumi preview --stack <s>`` finds its stack; a backend directory that cannot be opened is one line
naming it, never a traceback. The real CLI (toolchain tier: ``make pulumi`` first), on a backend of the test's own.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path

import pytest

from lakehouse_platform.cli import main
from lakehouse_platform.control import toolchain, workspace
from tests.support import REPO_ROOT

TOOLS_DIR = REPO_ROOT / ".tools"

pytestmark = [
    pytest.mark.toolchain,
    pytest.mark.skipif(not (TOOLS_DIR / "bin" / "pulumi").exists(), reason="the project's Pulumi CLI: make pulumi"),
]


@pytest.fixture
def fresh_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's file backend, somewhere that does not exist yet (a fresh clone has none)."""
    backend = tmp_path / "clone" / ".pulumi-state"
    monkeypatch.setattr(toolchain, "project_backend", lambda: f"file://{backend}")
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.setenv("LAKEHOUSE_PULUMI", "project")
    toolchain._choose.cache_clear()
    return backend


def test_the_shell_environment_makes_the_backend_and_the_stacks_a_plain_preview_needs(fresh_backend: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["env", "--shell"]) == 0
    assert f"export PULUMI_BACKEND_URL=file://{fresh_backend}" in out.getvalue()
    assert fresh_backend.is_dir()
    env = workspace.pulumi_env()
    listed = subprocess.run([str(TOOLS_DIR / "bin" / "pulumi"), "stack", "ls", "--json"], env={**env, "HOME": "/root"},
                            cwd=str(Path(__file__).resolve().parents[2]), capture_output=True, text=True, check=True)
    names = {entry["name"] for entry in __import__("json").loads(listed.stdout)}
    assert {"native", "lab", "lab-offline"} <= names and "cloud" not in names  # the cloud's is a team's backend
    assert "stack native created" in err.getvalue()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err := io.StringIO()):
        assert main(["env", "--shell"]) == 0  # a second time: nothing more to make
    assert "created" not in err.getvalue()


def test_a_backend_that_cannot_be_opened_is_one_line_not_a_traceback(fresh_backend: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = fresh_backend.parent / "not-a-directory"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file where the backend directory should be\n")
    monkeypatch.setattr(toolchain, "project_backend", lambda: f"file://{blocked}")
    with pytest.raises(workspace.StackCommandFailed) as failed:
        workspace.select("native")
    said = str(failed.value)
    assert said.startswith(f"the Pulumi backend file://{blocked} cannot be used: File exists") and "\n" not in said
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert main(["outputs", "--stack", "native"]) == 1  # the command line: that one line, no traceback
    assert "cannot be used" in out.getvalue() and "Traceback" not in out.getvalue()
