"""The job's inputs: the typed model, and what a change of each means."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lakehouse_platform.by_value import known
from lakehouse_platform.services.flink.rest import FlinkJobError

#: Inputs whose change resubmits the job (stop-with-savepoint, then run).
SUBMIT_KEYS = ("program_args", "jar_digest", "jar_path", "entry_class", "parallelism", "checkpoint_dir",
               "savepoint_dir", "restore", "rest_url")
REPLACE_KEYS = ("job_name",)
RECORD_ONLY_KEYS = ("ready_timeout_s", "stop_timeout_s", "host_paths", "labels", "state_version", "state_owner")
INPUT_KEYS = REPLACE_KEYS + SUBMIT_KEYS + RECORD_ONLY_KEYS


class JobInputs(BaseModel):
    """Validated inputs of one streaming job (the resource's properties)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    rest_url: Annotated[str, Field(pattern=r"^https?://")]
    job_name: Annotated[str, Field(min_length=1)]
    jar_path: Annotated[str, Field(min_length=1)]
    # Changes whenever the jar does (the artifact's digest): the jar is uploaded under a name carrying it.
    jar_digest: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    entry_class: Annotated[str, Field(min_length=1)]
    program_args: list[str] = []
    parallelism: Annotated[int, Field(ge=1)] = 1
    checkpoint_dir: str
    savepoint_dir: str
    host_paths: dict[str, str] = {}
    restore: Literal["latest", "none"] = "latest"
    # The job graph's version: savepoints of one version restore into the same version only (declared with the job).
    state_version: Annotated[int, Field(ge=1)] = 1
    ready_timeout_s: Annotated[float, Field(gt=0)] = 240.0
    stop_timeout_s: Annotated[float, Field(gt=0)] = 120.0
    labels: dict[str, str] = {}
    # "uid:gid" Flink runs as where it is another user than the deploying host's (the lab's image: 9999:9999): a
    # directory of its state the host makes (the lineage's savepoint directory) is handed to it, or Flink cannot
    # write its savepoints there. None: Flink runs as the host's user (native).
    state_owner: Annotated[str, Field(pattern=r"^\d+:\d+$")] | None = None

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> JobInputs:
        try:
            return cls.model_validate(known(props, INPUT_KEYS))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise FlinkJobError(f"job {props.get('job_name', '?')!r}: invalid inputs: {problems}") from None

    @property
    def jar_name(self) -> str:
        """The name the jar is uploaded under: its content in the name, so a new build is a new jar."""
        stem = Path(self.jar_path).stem
        return f"{stem}-{self.jar_digest[:12]}.jar"
