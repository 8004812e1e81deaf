"""The verified artifact cache: a directory outside the repo, a manifest of sha256 sums, file locks.

The cache lives in ``${LAKEHOUSE_CACHE:-~/.cache/lakehouse-platform}/artifacts``, so a fresh clone on
the same machine (CI) finds it warm. Every entry records the sha256 and size of the files it owns in
``manifest.json``. ``verified`` re-hashes them (``make artifacts`` does, on every run);
``lookup`` — what the Pulumi program uses — checks presence and sizes only, so evaluating the
program is cheap and never writes anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from lakehouse_platform.artifacts.artifact import Artifact, ArtifactError
from lakehouse_platform.paths import cache_base

CHUNK = 1 << 20
console = Console(stderr=True)

#: A manifest entry, as stored in manifest.json.
Entry = dict[str, Any]
#: ``{relative path: {"sha256": hex, "size": bytes}}`` of the files an entry owns.
FileRecords = dict[str, dict[str, Any]]


def cache_root(create: bool = True) -> Path:
    """``<cache base>/artifacts`` (created when ``create``)."""
    root = cache_base() / "artifacts"
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """Hold the lock named ``name``: concurrent fetches of one artifact (a developer and CI) wait
    instead of racing, while different artifacts proceed in parallel."""
    locks = cache_root() / ".locks"
    locks.mkdir(exist_ok=True)
    with open(locks / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _manifest_path() -> Path:
    return cache_root(create=False) / "manifest.json"


def load_manifest() -> dict[str, Entry]:
    """Every recorded entry ({} when the cache is empty or absent)."""
    path = _manifest_path()
    if not path.exists():
        return {}
    try:
        manifest: dict[str, Entry] = json.loads(path.read_text())
        return manifest
    except json.JSONDecodeError:
        console.print(f"[yellow]{path} is not JSON; starting a new manifest[/]")
        return {}


def record(key: str, entry: Entry) -> None:
    """Write one manifest entry atomically, under the manifest's own lock."""
    with locked("manifest"):
        manifest = load_manifest()
        manifest[key] = entry
        tmp = _manifest_path().with_suffix(f".json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, _manifest_path())


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_record(path: Path) -> dict[str, Any]:
    return {"sha256": sha256_file(path), "size": path.stat().st_size}


def tree_files(root: Path) -> FileRecords:
    """Records of every regular file under ``root`` (symlinks skipped)."""
    return {
        str(path.relative_to(root)): file_record(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def tree_digest(files: FileRecords) -> str:
    """One sha256 naming a whole tree: over its sorted ``path sha256`` lines."""
    lines = "".join(f"{name} {meta['sha256']}\n" for name, meta in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def verified(entry: Entry | None) -> bool:
    """True when every file the entry recorded is present with its recorded size and sha256."""
    if not entry:
        return False
    root = Path(entry["root"])
    for name, meta in entry["files"].items():
        path = root / name
        try:
            if path.stat().st_size != meta["size"] or sha256_file(path) != meta["sha256"]:
                console.print(f"[yellow]{path} differs from the manifest; fetching it again[/]")
                return False
        except FileNotFoundError:
            return False
    return Path(entry["path"]).exists()


def _present(entry: Entry) -> bool:
    """Every recorded file exists with its recorded size (the cheap check of ``lookup``)."""
    root = Path(entry["root"])
    for name, meta in entry["files"].items():
        try:
            if (root / name).stat().st_size != meta["size"]:
                return False
        except FileNotFoundError:
            return False
    return Path(entry["path"]).exists()


def artifact_from(entry: Entry) -> Artifact:
    files = entry["files"]
    return Artifact(
        name=entry["name"],
        requested=entry["requested"],
        version=entry["version"],
        path=Path(entry["path"]),
        size_bytes=sum(int(meta["size"]) for meta in files.values()) if files else int(entry.get("size", 0)),
        sha256=entry["sha256"],
        classpath=tuple(Path(p) for p in entry.get("classpath", ())),
        main_class=entry.get("main_class"),
        notes=tuple(entry.get("notes", ())),
    )


def cached(key: str) -> Artifact | None:
    """The fully verified entry under ``key`` (hashes every file), or None."""
    entry = load_manifest().get(key)
    return artifact_from(entry) if entry and verified(entry) else None


def obtain(key: str, build: Callable[[], Entry]) -> Artifact:
    """The artifact under ``key``: the verified cache entry if there is one, else ``build()``'s entry, recorded.

    Under the key's lock, so two fetches of one artifact (a developer and CI) build it once; ``build``
    obtains the files (download, unpack, compile) and returns the manifest entry that describes them.
    """
    with locked(key):
        if found := cached(key):
            return found
        entry = build()
        record(key, entry)
        return artifact_from(entry)


def lookup(key: str) -> Artifact | None:
    """The entry under ``key`` if its files are present (sizes checked), else None. Writes nothing."""
    entry = load_manifest().get(key)
    return artifact_from(entry) if entry and _present(entry) else None


def run(argv: list[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run a command, return its stdout; on failure raise with its stderr tail."""
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip()[-2000:]
        raise ArtifactError(f"{' '.join(argv)} exited {result.returncode}:\n{tail}")
    return result.stdout
