"""The resource's inputs: the typed model, what a change of each means, and their validation.

Values are compared after normalisation (protobuf turns ints into floats, secrets arrive unwrapped), so
secrets compare by value (``input_view``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from lakehouse_platform.providers import is_unknown, known, plain
from lakehouse_platform.targets.native.local_service.errors import LocalServiceError

LOOPBACK = "127.0.0.1"
PID_FILE_NAME = ".pid"
SETUP_MARKER_NAME = ".local-service-setup-done"

# Inputs whose change needs a restart of the running process. A moved data directory is one: the process stops on
# the old one and starts on the new one (an update, never a replacement: see the package docstring).
RESTART_KEYS = (
    "restart_policy", "log_rotation",
    "argv", "env", "files", "health", "ports", "cwd", "log_file", "run_as_user", "ulimit_nofile", "post_start",
    "stop_signal", "data_dir",
)
# Inputs that define which service this is; a change is a replacement.
REPLACE_KEYS = ("service",)
# Inputs that are only recorded.
RECORD_ONLY_KEYS = ("health_timeout_s", "stop_grace_s", "setup", "labels", "memory_budget_bytes", "pre_stop")
INPUT_KEYS = REPLACE_KEYS + RESTART_KEYS + RECORD_ONLY_KEYS

HEALTH_KINDS = ("http", "tcp", "command")


def _absolute(path: str) -> str:
    if not os.path.isabs(path):
        raise ValueError("must be an absolute path")
    return path


AbsolutePath = Annotated[str, AfterValidator(_absolute)]
Argv = Annotated[list[str], Field(min_length=1)]


class _Health(BaseModel):
    model_config = ConfigDict(extra="allow")


class HttpHealth(_Health):
    """GET must answer ``expect_status``; with ``json_field`` the JSON body's field must equal
    ``json_expect`` if given, else be truthy (Trino: ``json_field="starting", json_expect=False``)."""

    kind: Literal["http"]
    url: Annotated[str, Field(pattern=r"^https?://")]
    expect_status: int = 200
    json_field: str | None = None


class TcpHealth(_Health):
    """A TCP connect succeeds."""

    kind: Literal["tcp"]
    host: str = LOOPBACK
    port: Annotated[int, Field(ge=1, le=65535)]


class CommandHealth(_Health):
    """The command exits 0 (e.g. ``pg_isready``)."""

    kind: Literal["command"]
    argv: Argv


HealthCheck = Annotated[HttpHealth | TcpHealth | CommandHealth, Field(discriminator="kind")]


class RestartPolicy(BaseModel):
    """How the watchdog restarts a service that crashed after it was up (see watchdog.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_restarts: Annotated[int, Field(ge=0)] = 5
    window_s: Annotated[float, Field(gt=0)] = 300.0
    backoff_initial_s: Annotated[float, Field(gt=0)] = 1.0
    backoff_max_s: Annotated[float, Field(gt=0)] = 30.0


class LogRotation(BaseModel):
    """How the watchdog keeps the service's log: rotated past ``max_bytes``, ``keep`` old files (see watchdog.py).

    The defaults are the model's (``lakehouse_platform.model.LogSpec``), so a stack recorded before rotation existed
    reads as unchanged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_bytes: Annotated[int, Field(ge=1024 * 1024)] = 32 * 1024 * 1024
    keep: Annotated[int, Field(ge=0)] = 2


class ServiceInputs(BaseModel):
    """Validated, typed inputs of one local service (the resource's properties)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    service: Annotated[str, Field(min_length=1)]
    argv: Argv
    cwd: AbsolutePath
    data_dir: AbsolutePath
    log_file: AbsolutePath
    health: HealthCheck
    env: dict[str, str] = {}
    files: dict[AbsolutePath, str] = {}
    ports: list[Annotated[int, Field(ge=1, le=65535)]] = []
    setup: list[Argv] = []
    post_start: list[Argv] = []
    # Run before the process stops for an update (drain it: Flink's managers stop the job with a savepoint first).
    pre_stop: list[Argv] = []
    health_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    stop_grace_s: Annotated[float, Field(ge=0)] = 10.0
    # The signal that asks the service to stop cleanly (PostgreSQL: SIGINT, its fast shutdown).
    stop_signal: Literal["SIGTERM", "SIGINT"] = "SIGTERM"
    run_as_user: str | None = None
    ulimit_nofile: Annotated[int, Field(gt=0)] | None = None
    restart_policy: RestartPolicy = RestartPolicy()
    log_rotation: LogRotation = LogRotation()
    # Recorded for reviewers and the policy pack (layer, owner; the service's memory budget).
    labels: dict[str, str] = {}
    memory_budget_bytes: int | None = None

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> ServiceInputs:
        """Build from Pulumi properties; raises ``LocalServiceError`` listing every invalid input."""
        problems = validate_props(props)
        if problems:
            name = props.get("service", "?")
            raise LocalServiceError(
                f"service '{name}': invalid inputs: " + "; ".join(f"{k}: {why}" for k, why in problems)
            )
        return cls.model_validate(known(props, INPUT_KEYS))

    def to_props(self) -> dict[str, Any]:
        """The inputs as plain properties (the part of the outputs that echoes the inputs)."""
        props = self.model_dump(mode="json")
        props["health"] = self.health_check
        return props

    @property
    def health_check(self) -> dict[str, Any]:
        """The health check as the probe reads it (keys given, e.g. ``json_expect: false``, are kept)."""
        return self.health.model_dump(exclude_none=True)

    @property
    def pid_file(self) -> Path:
        return Path(self.data_dir) / PID_FILE_NAME

    @property
    def setup_marker(self) -> Path:
        return Path(self.data_dir) / SETUP_MARKER_NAME


def _reason(error: Any) -> str:
    if error["type"] == "union_tag_invalid":
        return f"unknown kind {error['input'].get('kind')!r}, expected one of {', '.join(HEALTH_KINDS)}"
    return str(error["msg"]).removeprefix("Value error, ")


def validate_props(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the inputs as ``(property, reason)``; values not known yet are skipped."""
    unknown = {k for k in INPUT_KEYS if is_unknown(props.get(k))}
    try:
        ServiceInputs.model_validate(known(props, INPUT_KEYS))
    except ValidationError as exc:
        problems: dict[str, str] = {}
        for error in exc.errors():
            key = str(error["loc"][0])
            if key not in unknown:
                problems.setdefault(key, _reason(error))
        return list(problems.items())
    return []


def input_view(props: Mapping[str, Any]) -> dict[str, Any]:
    """The resource inputs found in ``props`` (inputs or outputs), normalized, defaults filled in."""
    defaults = {name: field.default.model_dump() if isinstance(field.default, BaseModel) else field.default
                for name, field in ServiceInputs.model_fields.items()}
    return {key: plain(props.get(key, defaults.get(key)), drop_none=True) for key in INPUT_KEYS}
