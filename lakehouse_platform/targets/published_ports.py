"""The lab's published ports, checked on this host before any resource is made.

A port the lab publishes on 127.0.0.1 that something else already holds would otherwise be found by the engine
when it starts that container, tens of resources into ``pulumi up``. Checked when the program is evaluated (preview
and up alike): each taken port is named with its config key, its number and what holds it (the process, by psutil,
and the container publishing it, by the engine), and one setting moves them all (``lab.published_port_offset``).
A port held by this stack's own container (a second ``up``) is no conflict. Only an engine on this host publishes
here: with ``DOCKER_HOST`` naming another host there is nothing to check.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from lakehouse_platform.model import PlatformSpec
from lakehouse_platform.targets.native.local_service import LOOPBACK, port_is_free, port_owner


@dataclass(frozen=True)
class Publisher:
    """A running container that publishes a host port: its name and the networks it is attached to."""

    name: str
    networks: tuple[str, ...]


#: host port -> the container publishing it, as the engine reports; None where no engine answers.
Publishers = Callable[[], dict[int, Publisher] | None]


def engine_is_local(env: dict[str, str] | None = None) -> bool:
    """Whether the engine's published ports are this host's: ``DOCKER_HOST`` unset or a unix socket."""
    host = (env if env is not None else os.environ).get("DOCKER_HOST", "")
    return not host or host.startswith("unix://")


def engine_publishers() -> dict[int, Publisher] | None:
    """Every host port the engine's running containers publish (the Docker SDK at ``DOCKER_HOST``); None where no
    engine answers (the conflict is then reported with the holding process alone)."""
    try:
        # The SDK imported by name: the repository's docker/ directory would shadow it for type checkers.
        client = importlib.import_module("docker").from_env(timeout=10)
        containers = client.containers.list()
    except Exception:  # noqa: BLE001 - no engine, or one that does not answer: nothing to attribute ports to
        return None
    found = {}
    for container in containers:
        settings = container.attrs.get("NetworkSettings") or {}
        networks = tuple(sorted(settings.get("Networks") or {}))
        for bindings in (settings.get("Ports") or {}).values():
            for binding in bindings or []:
                if str(binding.get("HostPort", "")).isdigit():
                    found[int(binding["HostPort"])] = Publisher(container.name, networks)
    return found


def conflicts(spec: PlatformSpec, stack: str, publishers: Publishers = engine_publishers,
              is_free: Callable[[int], bool] = port_is_free) -> list[str]:
    """Every published port of the stack's enabled services that something other than this stack holds, one line
    each: the key, the port and what holds it, and how to move the lab's ports. Empty when all are free."""
    network = f"{spec.name}-{stack}"  # the lab's network: its containers are the stack's own
    taken: list[tuple[str, int]] = []
    for name, service in spec.enabled_services().items():
        for port_name, port in service.ports.items():
            if port.external is not None and not is_free(port.external):
                taken.append((f"services.{name}.ports.{port_name}.external", port.external))
    if not taken:
        return []
    by_port = publishers() or {}
    problems = []
    for key, number in taken:
        container = by_port.get(number)
        if container is not None and network in container.networks:
            continue  # this stack's own container publishes it (a second `up`, a preview of the running lab)
        what = port_owner(number) or f"a process psutil cannot name (try: ss -ltnp 'sport = :{number}')"
        if container is not None:
            what += f", publishing it for container {container.name} (network {', '.join(container.networks)})"
        problems.append(f"{key}: port {number} on {LOOPBACK} is already in use by {what}")
    if not problems:
        return []
    offset = spec.lab.published_port_offset
    highest = max(port.external for service in spec.enabled_services().values()
                  for port in service.ports.values() if port.external is not None)
    problems.append(f"lab.published_port_offset: stop what holds them, or move every published port of the lab at "
                    f"once in Pulumi.{stack}.yaml (now {offset}; allowed up to {65535 - (highest - offset)})")
    return problems
