"""Every e2e module has its lane (``tests/conftest.py``, ``E2E_LANES``): a module without one is a third unit of work
that xdist may queue behind either lane, and the tier's time is then no longer what the lanes were balanced for."""

from __future__ import annotations

from tests.conftest import E2E_LANES
from tests.support import REPO_ROOT


def test_every_e2e_module_is_in_one_of_the_two_lanes():
    modules = {p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "tests" / "e2e").glob("test_*.py")}
    assert modules == set(E2E_LANES), {"without a lane": sorted(modules - set(E2E_LANES)),
                                       "no such module": sorted(set(E2E_LANES) - modules)}
    assert sorted(set(E2E_LANES.values())) == ["e2e-lane-1", "e2e-lane-2"]
