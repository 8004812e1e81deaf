"""Who connects to a service, and how addresses resolve on each side of the network.

Every service has two addresses: the internal one (another service or container reaches it) and the
external one (a client on the host reaches it). ``ServiceContext`` is what a service definition reads
while it renders: the spec, its own name, and these addresses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from lakehouse_platform.model import PlatformSpec, ServiceSpec, Target


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


def url(spec: PlatformSpec, service: str, port: str, side: Side, path: str = "", scheme: str = "http") -> str:
    """``http://host:port/path`` of a service port from one side."""
    return f"{scheme}://{address(spec, service, port, side)}{path}"


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

    def enabled(self, service: str) -> bool:
        return service in self.spec.enabled_services()
