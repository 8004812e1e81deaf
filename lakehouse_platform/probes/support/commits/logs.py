"""A service's log as evidence: the lines since an offset that carry a symptom."""

from __future__ import annotations

from pathlib import Path


def grep_log(path: str | Path | None, needle: str, since_offset: int = 0, limit: int = 5) -> list[str]:
    """Lines of a service log (from byte ``since_offset``) containing ``needle`` (case-insensitive)."""
    if not path:
        return []
    try:
        with open(path, "rb") as handle:
            handle.seek(since_offset)
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    found = [line.strip() for line in text.splitlines() if needle.lower() in line.lower()]
    return found[:limit]


def log_size(path: str | Path | None) -> int:
    try:
        return Path(path).stat().st_size if path else 0
    except OSError:
        return 0
