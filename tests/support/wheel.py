"""The package's wheel as ``make dist`` builds it (``pip wheel --no-deps --no-build-isolation``, offline), from the
checkout's tracked files (no stray file of a working tree), and a fresh virtualenv a team would make with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT

#: The whole dependency tree, hash-pinned (``make lock``): a team's virtualenv takes the package's pins from it.
LOCK = REPO_ROOT / "requirements.lock"


def tracked(*paths: str) -> list[str]:
    """The checkout's files git tracks under ``paths``."""
    done = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=REPO_ROOT, capture_output=True, check=True)
    return [p for p in done.stdout.decode().split("\0") if p]


def copy_source(into: Path) -> Path:
    """What the build reads: pyproject.toml, the README and the package, as tracked."""
    for name in tracked("pyproject.toml", "README.md", "lakehouse_platform"):
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_bytes((REPO_ROOT / name).read_bytes())
    return into


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel of ``source`` (``copy_source``) in ``out``."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-q", "-w", str(out), str(source)], check=True, timeout=600)
    (built,) = out.glob("lakehouse_platform-*.whl")
    return built


def runtime_closure(distribution: str = "lakehouse-platform") -> set[str]:
    """The distributions the package needs at run time: its dependencies (no extra: not this repository's dev tools,
    not the operations image's group) and theirs, with the extras each asks for, as this venv has them installed."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: set[str] = set()
    todo = [(distribution, frozenset[str]())]
    while todo:
        name, extras = todo.pop()
        try:
            declared = requires(name) or []
        except PackageNotFoundError:
            raise AssertionError(f"{name}: needed at run time, not installed in {sys.prefix}") from None
        for text in declared:
            requirement = Requirement(text)
            if requirement.marker is not None and not any(
                    requirement.marker.evaluate({"extra": extra}) for extra in (extras or {""})):
                continue
            key = canonicalize_name(requirement.name)
            if key not in found:
                found.add(key)
                todo.append((requirement.name, frozenset(requirement.extras)))
    return found


def runtime_lock(into: Path) -> Path:
    """``requirements.lock``'s entries for ``runtime_closure`` alone, their hashes kept: what a team installs."""
    from packaging.utils import canonicalize_name

    wanted, kept, keep = runtime_closure(), [], False
    for line in LOCK.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            keep = canonicalize_name(line.split("==", 1)[0].split("[", 1)[0]) in wanted
        if keep:
            kept.append(line)
    into.write_text("\n".join(kept) + "\n")
    return into


def team_venv(venv: Path, wheels: Path, requirements: Path) -> Path:
    """A fresh virtualenv at ``venv`` as a team makes one: the package's run-time dependencies from the hash lock
    (pip's cache: no network beyond PyPI), then ``requirements`` (its pin of lakehouse-platform) from the wheels in
    ``wheels`` alone, and ``pip check``; nothing of the checkout on its path. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    # --no-compile: modules compile as they are first imported (pip's compiling of ~20,000 files is most of its time)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
    lock = runtime_lock(venv.parent / "runtime.lock")
    subprocess.run([*pip, "--require-hashes", "--no-deps", "-r", str(lock)], check=True, timeout=3600)
    subprocess.run([*pip, "--no-deps", "--no-index", "--find-links", str(wheels), "-r", str(requirements)],
                   check=True, timeout=300)
    subprocess.run([str(python), "-m", "pip", "check", "--disable-pip-version-check"], check=True, timeout=300)
    return python
