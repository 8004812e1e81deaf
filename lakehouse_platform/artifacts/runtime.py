"""The operations runtime: the Python the native target runs the project's own processes on, outside any checkout.

The catalog gate, the metrics exporter, the schedulers, the post-start tasks and Flink's launcher are the
project's own Python. In a container they run from the operations image, built on ``runtime/image/operations.lock``;
natively they run on a virtualenv made from that same lock, in the artifact cache (``make artifacts``), keyed by
the lock's sha256 and the Python version: one lock on every target, and nothing a running service needs lives
in a checkout (its ``.venv`` included). The code they run is the stack's own copy (``NativeRuntime``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from lakehouse_platform.artifacts import cache
from lakehouse_platform.artifacts.artifact import Artifact
from lakehouse_platform.paths import PACKAGE_DIR

#: The lock the operations image is built on (``make lock``), and so the runtime: package data.
OPERATIONS_LOCK = PACKAGE_DIR / "runtime" / "image" / "operations.lock"
NAME = "operations-runtime"
MARKER = ".lock.sha256"


def base_python() -> str:
    """The interpreter behind this one (a venv's ``python`` resolved): what the runtime is made on."""
    return os.path.realpath(sys.executable)


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def runtime_key(lock: Path = OPERATIONS_LOCK) -> str:
    """The cache key: the lock's content and the Python version (a new lock or Python is a new runtime)."""
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    return f"runtime:{NAME}:{digest}:py{python_version()}"


def lookup() -> Artifact | None:
    """The runtime for the current lock, if ``make artifacts`` made it (never builds)."""
    return cache.lookup(runtime_key())


def python_of(runtime: Artifact) -> Path:
    """The runtime's interpreter."""
    return runtime.path / "bin" / "python"


def fetch(lock: Path = OPERATIONS_LOCK) -> Artifact:
    """The runtime in the cache: a venv on the base interpreter with the lock installed (hash-checked, wheels only)."""
    key = runtime_key(lock)
    digest = key.split(":")[2]

    def build() -> cache.Entry:
        home = cache.cache_root() / "runtime" / f"{NAME}-{digest}-py{python_version()}"
        shutil.rmtree(home, ignore_errors=True)
        cache.run([base_python(), "-m", "venv", str(home)])
        cache.run([str(home / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                   "--require-hashes", "--no-deps", "--only-binary=:all:", "-r", str(lock)])
        (home / MARKER).write_text(hashlib.sha256(lock.read_bytes()).hexdigest() + "\n")
        files = {name: cache.file_record(home / name) for name in (MARKER, "pyvenv.cfg")}
        return {"name": NAME, "requested": lock.name, "version": f"py{python_version()}",
                "path": str(home), "root": str(home), "files": files, "sha256": cache.tree_digest(files),
                "source": f"PyPI (pip install --require-hashes -r {lock.name})",
                "notes": [f"the native target's Python processes run on it ({lock})"]}

    return cache.obtain(key, build)
