"""One service of the platform as a stack may set it: pin, image, ports, health, budget, dependencies."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from lakehouse_platform.model.base import SIZE_HELP, Size, Strict, parse_size, pinned_image
from lakehouse_platform.model.layers import Layer

# Environment variable names that hold credentials: their values belong in secret config.
_CREDENTIAL_NAME = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY(?!_ID)|API_KEY)",
                              re.IGNORECASE)
_SECRET_PLACEHOLDER = re.compile(r"^\$\{(secret:[a-z0-9-]+|ENV:[A-Za-z0-9_]+)\}$")
# The smallest budget any platform process runs in (a socat sidecar); Docker reads 0 as unlimited.
MIN_MEMORY_BYTES = 16 * 1024 * 1024


class PortSpec(Strict):
    """One port of a service: the one other services use and the one host-side clients use."""

    internal: int = Field(ge=1, le=65535, description="Port inside the service's network (container port).")
    external: int | None = Field(
        default=None, ge=1024, le=65535,
        description="Port host-side clients reach on 127.0.0.1; None keeps the port internal.",
    )

    @property
    def bound(self) -> int:
        """The port a native process binds on 127.0.0.1 (its external one, else its internal one)."""
        return self.external or self.internal


class HealthCheckSpec(Strict):
    """How a target knows a service is ready."""

    kind: Literal["http", "tcp", "command"] = Field(description="http GET, TCP connect, or a command.")
    port: str | None = Field(default=None, description="Name of the service port probed (http, tcp).")
    path: str = Field(default="/", description="HTTP path probed (http), starting with '/'.")
    command: list[str] = Field(
        default_factory=list,
        description="In-container health command (docker test form); required for kind=command.",
    )
    interval_s: int = Field(default=5, ge=1, le=300, description="Seconds between checks.")
    timeout_s: int = Field(default=3, ge=1, le=120, description="Seconds one check may take.")
    retries: int = Field(default=30, ge=1, le=1000, description="Failed checks before unhealthy.")
    start_period_s: int = Field(default=10, ge=0, le=900, description="Grace period after start.")
    ready_timeout_s: int = Field(
        default=120, ge=5, le=1800, description="Longest a deployment waits for the service to be healthy."
    )

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or any(c.isspace() for c in value):
            raise ValueError(f"{value!r} is not an HTTP path: it starts with '/' and holds no spaces, e.g. /healthz")
        return value

    @model_validator(mode="after")
    def _complete(self) -> HealthCheckSpec:
        if self.kind in ("http", "tcp") and not self.port:
            raise ValueError(f"a {self.kind} health check needs 'port' (the name of one of the service's ports)")
        if self.kind == "command" and not self.command:
            raise ValueError("a command health check needs 'command'")
        if self.ready_timeout_s < self.start_period_s:
            raise ValueError(f"ready_timeout_s: {self.ready_timeout_s} is shorter than start_period_s "
                             f"{self.start_period_s}; the deployment would give up on the service while it is still "
                             "allowed to start: wait at least the start period")
        return self


class RestartSpec(Strict):
    """How a service that crashed is brought back: natively by its watchdog, on docker by the engine."""

    max_restarts: int = Field(default=5, ge=0, le=100,
                              description="Restarts allowed within window_s before giving up (0: never restart).")
    window_s: int = Field(default=300, ge=10, le=86400, description="Window (seconds) the restart limit counts in.")
    backoff_initial_s: float = Field(default=1.0, gt=0, le=60, description="Delay before the first restart.")
    backoff_max_s: float = Field(default=30.0, gt=0, le=600, description="Longest delay (it doubles up to this).")

    @model_validator(mode="after")
    def _backoff_grows(self) -> RestartSpec:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError(f"backoff_max_s: {self.backoff_max_s:g} is shorter than backoff_initial_s "
                             f"{self.backoff_initial_s:g}; the delay starts at backoff_initial_s and doubles up to "
                             "backoff_max_s, so the longest delay must be at least the first")
        return self


class LogSpec(Strict):
    """How a native service's log is kept: rotated by its watchdog by size, a few old files kept."""

    max_size: str = Field(default="32MiB", description=f"The log is rotated when it grows past this: {SIZE_HELP}.")
    keep: int = Field(default=2, ge=0, le=100, description="Rotated files kept (<log>.1 the newest); older ones "
                                                           "are deleted.")

    @field_validator("max_size")
    @classmethod
    def _size(cls, value: str) -> str:
        if parse_size(value) < 1024 * 1024:
            raise ValueError(f"{value!r} is too small: at least 1MiB (a log rotated every few lines loses them)")
        return value

    @property
    def max_bytes(self) -> int:
        return parse_size(self.max_size)


class ServiceSpec(Strict):
    """One service of the platform, on any target."""

    layer: Layer = Field(description="The layer the service belongs to.")
    enabled: bool = Field(default=True, description="Whether this stack runs the service.")
    role: str = Field(default="", description="What the service is, in a few words.")
    owner: str | None = Field(
        default=None, description="Team owning this service; defaults to its layer's owner (engines have their own)."
    )
    kind: Literal["server", "job"] = Field(
        default="server", description="server: long-running, health-checked; job: runs once to completion."
    )
    version: str = Field(min_length=1, description="The pinned version of the service.")
    native_version: str | None = Field(
        default=None, description="Version the native target obtains where the registries lack the pin."
    )
    bundles: dict[str, str] = Field(
        default_factory=dict,
        description="Libraries the service ships, name -> version (an engine's Iceberg is whatever it ships); "
                    "the version manifest probe checks the running service against it.",
    )
    native_bundles: dict[str, str] | None = Field(
        default=None, description="What the native_version build ships, where it differs from 'bundles'."
    )
    aws_version: str | None = Field(
        default=None, description="Version the aws target's managed service runs where it offers no build of the pin."
    )
    aws_bundles: dict[str, str] | None = Field(
        default=None, description="What the aws_version build ships, where it differs from 'bundles'."
    )
    image: str = Field(description="Container image, always with an explicit tag (digest advised).")
    ports: dict[str, PortSpec] = Field(default_factory=dict, description="Named ports.")
    env: dict[str, str] = Field(default_factory=dict, description="Non-secret environment variables, on every target "
                                                                  "(the service's own settings win).")
    command: list[str] = Field(default_factory=list, description="Container command override (docker and aws; "
                                                                 "natively refused: a process runs its own argv).")
    health: HealthCheckSpec | None = Field(default=None, description="Readiness check (required for servers).")
    memory: str = Field(description=f"Memory budget and container limit: {SIZE_HELP}.")
    heap: str | None = Field(default=None, description="JVM heap (-Xmx) for JVM services.")
    disk: Size | None = Field(
        default=None,
        description=f"Disk budget of the service's state ({SIZE_HELP}): natively its data dir, measured by the "
                    "exporter; ServiceDiskFilling fires before its growth reaches it, ServiceDiskOverBudget past it. "
                    "None: no budget.")
    logs: LogSpec = Field(default_factory=LogSpec, description="How the service's log is rotated (native: by its "
                                                               "watchdog; containers log to the engine).")
    depends_on: list[str] = Field(default_factory=list, description="Services that must be up first.")
    restart: RestartSpec = Field(default_factory=RestartSpec, description="How a crashed server is brought back.")

    @field_validator("image")
    @classmethod
    def _image_pinned(cls, value: str) -> str:
        return pinned_image(value)

    @field_validator("memory", "heap")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        if value is not None and parse_size(value) < MIN_MEMORY_BYTES:
            raise ValueError(
                f"{value!r} is too small: at least 16MiB (a memory limit of 0 would mean unlimited to Docker)"
            )
        return value

    @field_validator("env")
    @classmethod
    def _no_plain_credentials(cls, env: dict[str, str]) -> dict[str, str]:
        for key in env:
            if not key or "=" in key or any(c.isspace() or c == "\0" for c in key):
                raise ValueError(f"{key!r} is not an environment variable name: no '=', spaces or NUL, not empty")
        for key, value in env.items():
            if _CREDENTIAL_NAME.search(key) and value and not _SECRET_PLACEHOLDER.match(value):
                raise ValueError(
                    f"{key} holds a credential in plain text; secrets belong in secret config: "
                    f"`pulumi config set --secret lakehouse:<name> <value>` (see README, Configuration)"
                )
        return env

    @model_validator(mode="after")
    def _consistent(self) -> ServiceSpec:
        if self.kind == "server" and self.health is None:
            raise ValueError("a server needs a health check ('health')")
        if self.health and self.health.port and self.health.port not in self.ports:
            raise ValueError(
                f"health.port {self.health.port!r} is not one of the service's ports "
                f"({', '.join(self.ports) or 'none'})"
            )
        if self.heap and parse_size(self.heap) >= parse_size(self.memory):
            raise ValueError(f"heap {self.heap} must be smaller than the memory budget {self.memory}")
        internal: dict[int, str] = {}
        for port_name, port in self.ports.items():
            if port.internal in internal:
                raise ValueError(f"ports.{port_name}.internal: {port.internal} is also ports.{internal[port.internal]}"
                                 ".internal; two ports of one service cannot share a number")
            internal[port.internal] = port_name
        return self

    @property
    def memory_bytes(self) -> int:
        """The memory budget in bytes."""
        return parse_size(self.memory)

    @property
    def disk_bytes(self) -> int | None:
        """The disk budget in bytes (None: none declared)."""
        return parse_size(self.disk) if self.disk is not None else None

    @property
    def image_tag(self) -> str:
        """The image's tag (the part after the last colon of its name)."""
        return self.image.partition("@")[0].rsplit(":", 1)[1]
