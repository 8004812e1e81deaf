"""What every service definition provides, and how addresses are resolved on each side of the network.

A service module (one per service, in this package) holds the service's whole definition: its
default spec (layer, pin, image, ports, health, budget, dependencies) and the configuration files
and launch details every target renders from that one spec.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from infra.spec.model import PlatformSpec, ServiceSpec, Target, parse_size


class Side(str, Enum):
    """Who is connecting: another service of the platform, or a client on the host."""

    INTERNAL = "internal"
    EXTERNAL = "external"


def host_of(spec: PlatformSpec, service: str, side: Side) -> str:
    """Host name of a service as seen from one side of the network."""
    if spec.target is Target.NATIVE:
        return "127.0.0.1"  # every native service is a local process on loopback
    if spec.target is Target.AWS:
        return f"{service}.{spec.name}.internal"  # Cloud Map private DNS, reachable inside the VPC
    return service if side is Side.INTERNAL else "localhost"


def port_of(spec: PlatformSpec, service: str, port: str, side: Side) -> int:
    """Port number of a named service port as seen from one side of the network."""
    ports = spec.services[service].ports[port]
    if spec.target is Target.AWS or (spec.target is Target.DOCKER and side is Side.INTERNAL):
        return ports.internal
    # Natively every process binds its external port; containers publish theirs on the host.
    return ports.external or ports.internal


def address(spec: PlatformSpec, service: str, port: str, side: Side) -> str:
    """``host:port`` of a service port from one side."""
    return f"{host_of(spec, service, side)}:{port_of(spec, service, port, side)}"


def url(spec: PlatformSpec, service: str, port: str, side: Side, path: str = "") -> str:
    """``http://host:port/path`` of a service port from one side."""
    return f"http://{address(spec, service, port, side)}{path}"


def secret(name: str) -> str:
    """A placeholder for a named secret inside a command, environment value or file.

    Plans stay plain strings; the target swaps placeholders for Pulumi secrets, so the rendered
    value is itself a secret in state and outputs.
    """
    return "${secret:" + name + "}"


SECRET_TOKEN = re.compile(r"\$\{secret:([a-z0-9-]+)\}")


@dataclass
class ContainerPlan:
    """What the docker target needs to run one service as a container."""

    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    uploads: dict[str, str] = field(default_factory=dict)  # path in container -> file content
    upload_sources: dict[str, str] = field(default_factory=dict)  # path in container -> host file
    bind_mounts: dict[str, str] = field(default_factory=dict)  # host dir (under the stack's state) -> container path
    volumes: dict[str, str] = field(default_factory=dict)  # volume name suffix -> container path
    user: str | None = None
    network_mode_service: str | None = None  # share another service's network namespace (sidecar)


@dataclass
class NativePlan:
    """What the native target needs to run one service as a local process on 127.0.0.1."""

    argv: list[str]
    health: dict[str, Any]  # LocalService health check (http url / tcp port / command argv)
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # absolute path -> content
    setup: list[list[str]] = field(default_factory=list)  # once, before the first start
    post_start: list[list[str]] = field(default_factory=list)  # after every healthy start
    run_as_user: str | None = None
    ulimit_nofile: int | None = None
    stop_grace_s: float = 15.0


@dataclass(frozen=True)
class NativeHost:
    """Where one service lives on the host: its home (data dir) and what it is built from."""

    home: Path  # the service's data directory under the stack's state directory
    artifact: Any  # infra.targets.native.artifacts.Artifact (or None for services without one)
    java_home: Path | None = None
    python: str = "python3"  # the project's interpreter, for post-start tasks
    project_root: Path | None = None


@dataclass(frozen=True)
class ServiceContext:
    """Everything a service definition may read while rendering: the spec and its own name."""

    spec: PlatformSpec
    name: str

    @property
    def service(self) -> ServiceSpec:
        return self.spec.services[self.name]

    def listen_port(self, port: str) -> int:
        """The port number this service listens on for a named port, on this target."""
        return port_of(self.spec, self.name, port, Side.INTERNAL)

    def url(self, service: str, port: str, side: Side = Side.INTERNAL, path: str = "") -> str:
        return url(self.spec, service, port, side, path)

    def address(self, service: str, port: str, side: Side = Side.INTERNAL) -> str:
        return address(self.spec, service, port, side)


def jvm_heap_flag(service: ServiceSpec) -> str:
    """-Xmx for a JVM service, from its heap setting (every JVM gets an explicit heap)."""
    heap = service.heap or service.memory
    return f"-Xmx{parse_size(heap) // (1024 * 1024)}m"


def properties(values: dict[str, Any]) -> str:
    """A Java properties file from a mapping, in the mapping's order."""
    return "".join(f"{key}={value}\n" for key, value in values.items())
