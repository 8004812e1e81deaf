"""``make verify`` (and, in ``make test``, the e2e test ``tests/e2e/test_probes_on_an_isolated_stack.py``): the
whole probe suite, the disruptive probes too, on an isolated copy of the tests' native stack (``verify``: its own
ports and state, ``isolated.VERIFY_GOVERNANCE``'s canary namespaces and team identities), deployed, probed with
``lakehouse verify`` (JUnit in reports/probes.xml) and destroyed whatever happens. A team verifies its own deployed
stack with ``lakehouse verify --stack <its stack>``.
"""

from __future__ import annotations

import sys

from lakehouse_platform.control import commands, isolated
from lakehouse_platform.control.workspace import StackCommandFailed, forget

STACK = "verify"


def main(pytest_args: list[str]) -> int:
    """Deploy, probe, destroy; the probes' exit code (1 when the deploy failed)."""
    isolated.isolated_stack(STACK, overrides=isolated.VERIFY_GOVERNANCE)
    try:
        commands.console.print(f"==> stack {STACK} up in {commands.up(STACK, quiet=True):.1f} s")
        return commands.verify(STACK, pytest_args)
    except StackCommandFailed as exc:
        commands.console.print(f"error: {exc}", markup=False, highlight=False, style="red")
        return 1
    finally:
        commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
