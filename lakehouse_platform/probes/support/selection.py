"""Which probes may run against this stack: the safe ones always, the disruptive ones only where that is allowed.

A probe is **safe** when it leaves the stack as it found it and nobody would notice it ran: it reads (versions,
memory, lifecycle rules, backups listed and verified, the signals and alerts as they are, the scheduler's jobs), or
writes only to a canary namespace of its own, which it removes (the engines agreeing on one table, governance's
allow and deny, conditional writes under ``_probes/``). Every other probe is **disruptive**: faults, restarts, the
recovery drill, commit storms on the platform's own tables, maintenance runs, changes to a source database, alerts
made to fire. A probe says which it is with a marker (``@pytest.mark.safe`` or ``@pytest.mark.disruptive("why")``);
one that says neither counts as disruptive, so a forgotten marker can never disturb a stack someone relies on.

Disruptive probes run only against a stack whose config marks it disposable (``lakehouse:platform.disposable``,
the ``disposable`` stack output) or when ``--disruptive=<stack>`` names the stack the outputs are of (the ``stack``
output); a flag naming another stack is refused before any probe runs. Otherwise each disruptive probe skips,
saying why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SAFE = "safe"
DISRUPTIVE = "disruptive"


class RefusedFlag(ValueError):
    """``--disruptive`` names a stack these outputs are not of (or they name none): nothing runs."""


@dataclass(frozen=True)
class Disruption:
    """Whether this run may disturb the stack, and why (for the skip reason and the run's header line)."""

    allowed: bool
    stack: str
    why: str


def disruption(outputs: Mapping[str, Any], flag: str | None) -> Disruption:
    """What the stack outputs and ``--disruptive`` allow; ``RefusedFlag`` when the flag names another stack."""
    stack = outputs.get("stack")
    name = str(stack) if stack else "(unnamed)"
    if flag:
        if not stack:
            raise RefusedFlag(f"--disruptive={flag}: these outputs name no stack (the `stack` output: deployed before "
                              "it existed?); deploy the stack again, then name it")
        if flag != stack:
            raise RefusedFlag(f"--disruptive={flag} refused: these outputs are stack {stack}'s, not {flag}'s; "
                              "name the stack you mean to disturb")
        return Disruption(True, name, f"--disruptive={flag} names this stack")
    if outputs.get("disposable") is True:
        return Disruption(True, name, f"stack {name} is disposable (lakehouse:platform.disposable)")
    return Disruption(False, name, f"stack {name} is not marked disposable (lakehouse:platform.disposable: true), "
                                   f"and --disruptive={name} was not given")


@dataclass(frozen=True)
class Kind:
    """What a probe says it is: safe, or disruptive with why (``why`` empty for safe)."""

    safe: bool
    why: str


def kind_of(marks: Iterable[Any]) -> Kind:
    """A probe's kind from its marks (``pytest.Mark``): ``safe``, ``disruptive("why")``, neither (disruptive)."""
    names = {mark.name: mark for mark in marks}
    if SAFE in names and DISRUPTIVE not in names:
        return Kind(True, "")
    if DISRUPTIVE in names:
        args = names[DISRUPTIVE].args
        return Kind(False, str(args[0]) if args else "it disturbs the stack")
    return Kind(False, "it is not marked safe (a probe is disruptive unless it says otherwise)")


def skip_reason(kind: Kind, allowed: Disruption) -> str | None:
    """Why this probe skips on this stack, or None when it runs."""
    if kind.safe or allowed.allowed:
        return None
    return f"disruptive: {kind.why}; {allowed.why}"
