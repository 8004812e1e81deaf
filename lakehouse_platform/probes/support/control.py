"""The probes' hands on the stack's services: stop, start, restart, crash, signal, hang, memory, processes, files.

One seam for every target where something on this host can act on the services: the operator's own
(``lakehouse_platform.control.services``, which the recovery procedures use too). Natively it acts on processes by the
pids in ``native.services`` and starts a stopped service with ``pulumi up``; in the lab it acts on the
containers named in ``docker.containers`` through the Docker SDK (``docker stop/start/restart/pause/stats``,
the engine at ``DOCKER_HOST``, else the project's own engine). Where the target cannot (aws: managed services;
natively without ``--stack``: nothing to ``pulumi up``), the probe skips and says why.
"""

from __future__ import annotations

import pytest

from lakehouse_platform.control import services
from lakehouse_platform.control.services import (
    Instance,
    Memory,
    ProcessLine,
    ServiceControl,
    ServiceControlError,
    Unsupported,
)
from lakehouse_platform.probes.support.stack import Stack

__all__ = ["Instance", "Memory", "ProcessLine", "ServiceControl", "ServiceControlError", "Unsupported", "control",
           "control_or_none"]


def control_or_none(stack: Stack, starts_again: bool = False) -> tuple[ServiceControl | None, str]:
    """The stack's service control, or (None, why not). ``starts_again``: the probe starts a stopped service again,
    which natively is ``pulumi up`` on the stack named by ``--stack``."""
    try:
        found = services.for_outputs(stack.outputs, stack.name)
    except ServiceControlError as exc:
        return None, f"target {stack.target}: {exc}"
    if starts_again and found.target == "native" and not stack.name:
        return None, ("natively a stopped service is started again by `pulumi up` on its stack: run the probes with "
                      "--stack, not an outputs file")
    return found, ""


def control(stack: Stack, starts_again: bool = False) -> ServiceControl:
    """The stack's service control; skips the probe (with the reason) where the target has none here."""
    found, why = control_or_none(stack, starts_again)
    if found is None:
        pytest.skip(why)
    return found
