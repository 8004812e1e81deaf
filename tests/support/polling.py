"""Waiting for a deployed thing to reach a state, in the tests that deploy or supervise real processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T], timeout_s: float, every_s: float = 2.0) -> T:
    """``check()`` until it returns something truthy, which is returned; fails naming ``what`` and the last answer."""
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every_s)
    raise AssertionError(f"{what}: not within {timeout_s:g} s (last: {last})")
