"""The stack's copy of the operations code (lakehouse_platform/targets/native/runtime.py), written for real into a temp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lakehouse_platform.paths import PACKAGE_DIR, PACKAGE_PARENT
from lakehouse_platform.targets.native import runtime


def test_the_code_set_is_the_operations_images_and_carries_no_checkout_path() -> None:
    from docker.utils.build import exclude_paths

    sources = runtime.code_sources(PACKAGE_PARENT)
    patterns = [line for line in (PACKAGE_DIR / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    image = {f"lakehouse_platform/{p}" for p in exclude_paths(str(PACKAGE_DIR), patterns) if p.endswith(".py")
             and (PACKAGE_DIR / p).is_file()}
    assert set(sources) == image, "natively the processes run what the operations image runs"
    assert "lakehouse_platform/__init__.py" in sources and "lakehouse_platform/runtime/exporter/collector.py" in sources
    assert "lakehouse_platform/runtime/watchdog.py" in sources and "lakehouse_platform/runtime/tasks.py" in sources
    assert "lakehouse_platform/services/kafka_connect/runtime.py" in sources, "each service's runtime code"
    assert not any(name.endswith("/definition.py") for name in sources), "no service's program side"
    assert all(not name.startswith("/") for name in sources), "relative paths only"
    assert not any(name.startswith("lakehouse_platform/targets") for name in sources), "what the processes run, no more"


def test_install_swaps_versions_atomically_and_delete_removes_it(tmp_path: Path) -> None:
    provider = runtime.NativeRuntimeProvider()
    directory = str(tmp_path / "runtime")
    first = {"lakehouse_platform/__init__.py": "", "lakehouse_platform/runtime/__init__.py": "", "lakehouse_platform/runtime/hello.py": "WHO = 'one'\n"}
    created = provider.create({"directory": directory, "sources": first}).outs
    code = runtime.code_dir(directory)
    assert code.is_symlink() and (code / "lakehouse_platform/runtime/hello.py").read_text() == "WHO = 'one'\n"
    run = [sys.executable, "-c", "from lakehouse_platform.runtime import hello; print(hello.WHO)"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    assert subprocess.run(run, env=env, cwd="/", capture_output=True, text=True, check=True).stdout == "one\n"

    second = {**first, "lakehouse_platform/runtime/hello.py": "WHO = 'two'\n"}
    news = {"directory": directory, "sources": second}
    assert provider.diff("x", created, {"directory": directory, "sources": first}).changes is False
    assert provider.diff("x", created, news).changes is True
    updated = provider.update("x", created, news).outs
    assert updated["digest"] != created["digest"]
    assert subprocess.run(run, env=env, cwd="/", capture_output=True, text=True, check=True).stdout == "two\n"
    assert sorted(p.name for p in Path(directory).iterdir()) == ["code", f"code-{updated['digest']}"]

    # A moved state directory: the code installed in the new place, the old copy gone; an update, not a replacement.
    elsewhere = {"directory": str(tmp_path / "elsewhere"), "sources": second}
    moved = provider.diff("x", updated, elsewhere)
    assert moved.changes is True and moved.replaces == []
    relocated = provider.update("x", updated, elsewhere).outs
    assert relocated == {"directory": elsewhere["directory"], "digest": updated["digest"]}
    assert not Path(directory).exists()
    env = {**os.environ, "PYTHONPATH": str(runtime.code_dir(elsewhere["directory"]))}
    assert subprocess.run(run, env=env, cwd="/", capture_output=True, text=True, check=True).stdout == "two\n"
    provider.delete("x", relocated)
    assert not Path(elsewhere["directory"]).exists()
