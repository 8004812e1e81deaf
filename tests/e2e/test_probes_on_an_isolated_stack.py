"""The whole probe suite, the disruptive probes too, on an isolated copy of the tests' native stack (``verify``):
``make verify``'s run (``tests.support.verify``: deployed, probed, destroyed whatever happens), as a test of the e2e
tier so that it runs beside the other lane (``tests/conftest.py``, ``E2E_LANES``) instead of after the whole tier.

Its output (the probes' table, each failure with its evidence) is this test's; the JUnit of each probe is
``reports/probes.xml``, as ``make verify`` writes it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]

#: Deploy, 32 probes, destroy: 17-18 minutes in the lanes here (1,023-1,068 s), 12 alone; past this, a hang the
#: probes' own timeouts missed.
TIMEOUT_S = 45 * 60


def test_every_probe_passes_on_an_isolated_native_stack() -> None:
    # The probes are a pytest run of their own: nothing of this run's (its worker, its options) goes into it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "tests.support.verify"], cwd=REPO_ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S, check=False)
    print(done.stdout)
    assert done.returncode == 0, f"the probes exited {done.returncode} (their output is above; reports/probes.xml)"
