"""``FlinkJob``: a Pulumi dynamic resource for one streaming job on a Flink session cluster, via its REST API.

The docker and native targets deploy the platform's streaming writer with it; the resource talks to
the job manager's REST API from the host (its external address), so the same resource serves both.

Lifecycle contract
------------------
create
    A job of the same name that is already running is *adopted* (an interrupted ``pulumi up``, or a
    state that was lost): submitting twice would give two writers. Otherwise the job jar is uploaded
    (``POST /jars/upload``; a jar of the same name and digest already there is reused) and run
    (``POST /jars/<id>/run``). With ``restore: latest`` the run resumes from the newest savepoint or
    retained checkpoint of the job's *lineage* (its ``checkpoint_dir`` and ``savepoint_dir``, one per job
    name, table and source), found on the host through ``host_paths``: a job resubmitted after a job
    manager restart (a session cluster without HA forgets its jobs) or after ``destroy``/``up`` goes on
    exactly once instead of starting over. Create waits until every task of the job is RUNNING; if the
    job fails or stays not ready for ``ready_timeout_s``, it is cancelled and the error carries Flink's
    own root cause (``main()`` runs inside the job manager: an unreachable catalog is an HTTP 400 at once).
update
    A change of what the job runs (``program_args``, the jar, ``entry_class``, ``parallelism``, the state
    directories, ``restore``) is stop-with-savepoint (``POST /jobs/<id>/stop``: the savepoint itself
    commits the last data), then a resubmit from that savepoint. A changed lineage (a new table or
    source) resubmits without that savepoint: another table's uncommitted files must not be committed
    into this one. A job that is no longer running is resubmitted from its lineage's newest state.
delete
    Stop-with-savepoint (so nothing acknowledged is left uncommitted), falling back to cancel; a job
    manager that no longer answers has nothing left to stop.
diff / refresh
    Inputs are compared by value. ``diff`` also asks Flink whether the recorded job still runs, so
    ``pulumi up`` resubmits a lost job (refresh shows ``state`` as Flink reports it, or ``LOST``).

Serialization: like ``LocalServiceProvider``, the provider pickles as this module's source, executed in
the provider process, so the engine's Python needs only pulumi, pydantic and requests.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import pulumi
import pulumi.dynamic
import requests
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from infra.by_value import code_changed, is_unknown, known, poll

ACTIVE_STATES = frozenset({"CREATED", "INITIALIZING", "RUNNING", "RESTARTING", "FAILING", "CANCELLING",
                           "RECONCILING"})
HTTP_TIMEOUT_S = 30.0
POLL_S = 1.0
#: Inputs whose change resubmits the job (stop-with-savepoint, then run).
SUBMIT_KEYS = ("program_args", "jar_digest", "jar_path", "entry_class", "parallelism", "checkpoint_dir",
               "savepoint_dir", "restore", "rest_url")
REPLACE_KEYS = ("job_name",)
RECORD_ONLY_KEYS = ("ready_timeout_s", "stop_timeout_s", "host_paths", "labels", "state_version")
#: Beside a lineage's savepoints: the job graph version (``state_version``) whose state the lineage holds. The
#: program reads it before a deployment (``infra.services.flink.steps.in_place``) to refuse a graph that cannot
#: restore that state.
GRAPH_MARKER = "job-graph.json"
INPUT_KEYS = REPLACE_KEYS + SUBMIT_KEYS + RECORD_ONLY_KEYS


class FlinkJobError(Exception):
    """The job could not be submitted, become ready or be stopped; the message is for the operator."""


class FlinkUnreachable(FlinkJobError):
    """The job manager's REST API does not answer."""


# --------------------------------------------------------------------------------------------
# The REST API
# --------------------------------------------------------------------------------------------


def _root_cause(text: str, limit: int = 1500) -> str:
    """The most telling lines of a Java stack trace (its 'Caused by' lines), bounded."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith("Caused by:")]
    picked = (lines[:1] + causes[-3:]) if causes else lines[:4]
    return " | ".join(picked)[:limit]


class FlinkRest:
    """The parts of Flink's REST API a deployment needs (docs: flink rest_api)."""

    def __init__(self, url: str, timeout_s: float = HTTP_TIMEOUT_S):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.trust_env = False  # the job manager is on this host or its Docker network: never a proxy

    def _call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        try:
            return self.session.request(method, f"{self.url}{path}", timeout=kwargs.pop("timeout", self.timeout_s),
                                        **kwargs)
        except requests.RequestException as exc:
            raise FlinkUnreachable(f"Flink REST {self.url} does not answer ({type(exc).__name__})") from None

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._call(method, path, **kwargs)
        if response.status_code >= 300:
            try:
                errors = response.json().get("errors") or [response.text]
            except ValueError:
                errors = [response.text]
            raise FlinkJobError(f"{method} {path} answered {response.status_code}: "
                                f"{_root_cause(str(errors[-1]))}")
        return response.json() if response.content else {}

    def overview(self) -> dict[str, Any]:
        result: dict[str, Any] = self._json("GET", "/overview")
        return result

    def jobs(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._json("GET", "/jobs/overview").get("jobs", [])
        return result

    def find(self, name: str) -> dict[str, Any] | None:
        """The newest job called ``name`` that is not in a terminal state, or None."""
        live = [j for j in self.jobs() if j.get("name") == name and j.get("state") in ACTIVE_STATES]
        return max(live, key=lambda j: j.get("start-time", 0)) if live else None

    def job(self, job_id: str) -> dict[str, Any] | None:
        response = self._call("GET", f"/jobs/{job_id}")
        if response.status_code == 404:
            return None
        if response.status_code >= 300:
            raise FlinkJobError(f"GET /jobs/{job_id} answered {response.status_code}")
        result: dict[str, Any] = response.json()
        return result

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._json("GET", f"/jobs/{job_id}/checkpoints")
        return result

    def exceptions(self, job_id: str) -> list[str]:
        """Root causes of the job's failures, newest first."""
        try:
            history = self._json("GET", f"/jobs/{job_id}/exceptions").get("exceptionHistory") or {}
        except FlinkJobError:
            return []
        return [_root_cause(e.get("stacktrace") or e.get("exceptionName") or "") for e in history.get("entries", [])]

    def upload(self, jar: Path, name: str) -> str:
        """The id of jar ``name`` on the cluster, uploading ``jar`` under that name unless it is there."""
        for entry in self._json("GET", "/jars").get("files", []):
            if entry.get("name") == name:
                return str(entry["id"])
        with open(jar, "rb") as handle:
            result = self._json("POST", "/jars/upload", timeout=300,
                                files={"jarfile": (name, handle, "application/x-java-archive")})
        return Path(str(result["filename"])).name

    def run(self, jar_id: str, entry_class: str, args: Sequence[str], parallelism: int,
            savepoint: str | None = None) -> str:
        """Run a job (``main()`` runs inside the job manager); its id."""
        body: dict[str, Any] = {"entryClass": entry_class, "programArgsList": list(args), "parallelism": parallelism}
        if savepoint:
            body.update(savepointPath=savepoint, allowNonRestoredState=False)
        result = self._json("POST", f"/jars/{jar_id}/run", json=body, timeout=300)
        return str(result["jobid"])

    def cancel(self, job_id: str, wait_s: float = 60.0) -> str:
        self._call("PATCH", f"/jobs/{job_id}", params={"mode": "cancel"})
        return self.wait_terminal(job_id, wait_s)

    def wait_terminal(self, job_id: str, wait_s: float) -> str:
        """The job's state once it is no longer active (or the last one seen when ``wait_s`` runs out)."""
        state = ["UNKNOWN"]

        def terminal() -> str | None:
            job = self.job(job_id)
            state[0] = job.get("state", "UNKNOWN") if job else "GONE"
            return state[0] if state[0] not in ACTIVE_STATES else None

        return poll(terminal, wait_s, POLL_S) or state[0]

    def stop_with_savepoint(self, job_id: str, target_dir: str, wait_s: float = 120.0) -> str:
        """``POST /jobs/<id>/stop``: a final savepoint (it commits), then FINISHED. Its location."""
        trigger = self._json("POST", f"/jobs/{job_id}/stop", json={"drain": False, "targetDirectory": target_dir})
        request_id = trigger["request-id"]

        def completed() -> str | None:
            status = self._json("GET", f"/jobs/{job_id}/savepoints/{request_id}")
            if (status.get("status") or {}).get("id") != "COMPLETED":
                return None
            operation = status.get("operation") or {}
            if operation.get("location"):
                return str(operation["location"])
            cause = operation.get("failure-cause") or {}
            raise FlinkJobError(f"stop-with-savepoint of {job_id} failed: "
                                f"{_root_cause(str(cause.get('stack-trace') or cause))}")

        location = poll(completed, wait_s, POLL_S)
        if location is None:
            raise FlinkJobError(f"stop-with-savepoint of {job_id} did not complete within {wait_s:g}s")
        self.wait_terminal(job_id, 30.0)
        return location

    def wait_running(self, job_id: str, timeout_s: float) -> dict[str, Any]:
        """Wait until the job and every one of its tasks is RUNNING; raise with the root cause otherwise."""
        last = ["not seen yet"]

        def running() -> dict[str, Any] | None:
            job = self.job(job_id)
            if job is None:
                return None
            state = job.get("state")
            vertices = [v.get("status") for v in job.get("vertices", [])]
            if state == "RUNNING" and vertices and all(v == "RUNNING" for v in vertices):
                return job
            if state not in ACTIVE_STATES:
                causes = self.exceptions(job_id)
                raise FlinkJobError(f"job {job_id} is {state}: {causes[0] if causes else 'no exception recorded'}")
            last[0] = f"job {state}, tasks {sorted(set(vertices))}"
            return None

        found = poll(running, timeout_s, POLL_S)
        if found is not None:
            return found
        causes = self.exceptions(job_id)
        raise FlinkJobError(f"job {job_id} not running within {timeout_s:g}s ({last[0]})"
                            + (f"; last failure: {causes[0]}" if causes else ""))


# --------------------------------------------------------------------------------------------
# The job's lineage: where its state is, on the host
# --------------------------------------------------------------------------------------------


def to_host(flink_path: str, host_paths: Mapping[str, str]) -> Path | None:
    """A path as Flink sees it (``file:///...``) on this host, through ``host_paths`` (Flink prefix -> host)."""
    path = flink_path.removeprefix("file://").removeprefix("file:")
    for remote, local in sorted(host_paths.items(), key=lambda item: -len(item[0])):
        remote_path = remote.removeprefix("file://").removeprefix("file:")
        if path == remote_path or path.startswith(remote_path.rstrip("/") + "/"):
            return Path(local) / path[len(remote_path):].lstrip("/")
    return None


def to_flink(host_path: Path, host_paths: Mapping[str, str]) -> str:
    """A host path back as Flink sees it (the inverse of ``to_host``)."""
    for remote, local in sorted(host_paths.items(), key=lambda item: -len(item[1])):
        if host_path == Path(local) or Path(local) in host_path.parents:
            rest = host_path.relative_to(local)
            base = remote.removeprefix("file://").removeprefix("file:").rstrip("/")
            return f"file://{base}/{rest}" if str(rest) != "." else f"file://{base}"
    return f"file://{host_path}"


def latest_state(checkpoint_dir: str, savepoint_dir: str, host_paths: Mapping[str, str]) -> str | None:
    """The newest savepoint or retained checkpoint of a lineage (as Flink sees it), or None.

    Checkpoints are ``<checkpoint_dir>/<job id>/chk-<n>/_metadata``, savepoints
    ``<savepoint_dir>/savepoint-*/_metadata``; the newest ``_metadata`` wins (an unfinished checkpoint
    has none).
    """
    found: list[Path] = []
    for flink_dir, pattern in ((checkpoint_dir, "*/chk-*/_metadata"), (savepoint_dir, "savepoint-*/_metadata")):
        local = to_host(flink_dir, host_paths)
        if local is not None and local.is_dir():
            found += [m for m in local.glob(pattern) if m.is_file()]
    if not found:
        return None
    newest = max(found, key=lambda m: m.stat().st_mtime)
    return to_flink(newest.parent, host_paths)


# --------------------------------------------------------------------------------------------
# Inputs and the operations the provider runs
# --------------------------------------------------------------------------------------------


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


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def record_graph(spec: JobInputs) -> None:
    """Write the lineage's ``GRAPH_MARKER``: the graph version whose state it now holds (what a refusal reads)."""
    local = to_host(spec.savepoint_dir, spec.host_paths)
    if local is None:
        return  # a savepoint directory this host cannot see (aws): nothing to read it from either
    local.mkdir(parents=True, exist_ok=True)
    marker = {"state_version": spec.state_version, "job_name": spec.job_name, "jar_digest": spec.jar_digest,
              "recorded_at": _now()}
    (local / GRAPH_MARKER).write_text(json.dumps(marker) + "\n")


def recorded_graph(savepoint_dir: Path) -> int | None:
    """The graph version a lineage's state belongs to: its marker, else 1 (jobs before markers) when the lineage
    holds any state, else None (nothing to restore)."""
    try:
        return int(json.loads((savepoint_dir / GRAPH_MARKER).read_text())["state_version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    has_state = any(savepoint_dir.glob("savepoint-*/_metadata")) or any(
        savepoint_dir.parent.parent.glob(f"checkpoints/{savepoint_dir.name}/*/chk-*/_metadata"))
    return 1 if has_state else None


def submit(spec: JobInputs, restore_from: str | None) -> tuple[str, str]:
    """Upload (or reuse) the jar and run the job; wait until it runs. (job id, jar id). Cancels on failure."""
    rest = FlinkRest(spec.rest_url)
    jar_id = rest.upload(Path(spec.jar_path), spec.jar_name)
    job_id = rest.run(jar_id, spec.entry_class, spec.program_args, spec.parallelism, restore_from)
    try:
        rest.wait_running(job_id, spec.ready_timeout_s)
    except FlinkJobError:
        with contextlib.suppress(FlinkJobError):
            rest.cancel(job_id, wait_s=30.0)
        raise
    record_graph(spec)
    return job_id, jar_id


def start(spec: JobInputs) -> dict[str, Any]:
    """What create does: adopt the running job of this name, else submit (from the lineage's newest state)."""
    rest = FlinkRest(spec.rest_url)
    running = rest.find(spec.job_name)
    if running is not None:
        job_id = str(running["jid"])
        rest.wait_running(job_id, spec.ready_timeout_s)
        return _outputs(spec, job_id, "", "adopted the running job of this name", "RUNNING")
    restore_from = latest_state(spec.checkpoint_dir, spec.savepoint_dir, spec.host_paths) \
        if spec.restore == "latest" else None
    job_id, jar_id = submit(spec, restore_from)
    return _outputs(spec, job_id, jar_id, restore_from or "", "RUNNING")


def stop(spec: JobInputs, job_id: str) -> str:
    """Stop-with-savepoint (it commits the last data), else cancel. The savepoint's location, or ''."""
    rest = FlinkRest(spec.rest_url)
    job = rest.job(job_id) if job_id else None
    if job is None or job.get("state") not in ACTIVE_STATES:
        found = rest.find(spec.job_name)
        if found is None:
            return ""
        job_id = str(found["jid"])
    try:
        return rest.stop_with_savepoint(job_id, spec.savepoint_dir, spec.stop_timeout_s)
    except FlinkJobError as exc:
        pulumi.log.warn(f"{spec.job_name}: {exc}; cancelling instead")
        rest.cancel(job_id)
        return ""


def _outputs(spec: JobInputs, job_id: str, jar_id: str, restored_from: str, state: str) -> dict[str, Any]:
    return {**spec.model_dump(mode="json"), "job_id": job_id, "jar_id": jar_id, "restored_from": restored_from,
            "state": state, "submitted_at": _now()}


def live_state(props: Mapping[str, Any]) -> str:
    """What Flink says of the recorded job now: its state, ``LOST`` (unknown to Flink) or ``UNREACHABLE``."""
    try:
        rest = FlinkRest(str(props.get("rest_url", "")), timeout_s=10.0)
        job = rest.job(str(props.get("job_id", ""))) if props.get("job_id") else None
    except FlinkJobError:
        return "UNREACHABLE"
    return str(job.get("state")) if job else "LOST"


# --------------------------------------------------------------------------------------------
# Pulumi provider and resource
# --------------------------------------------------------------------------------------------

class FlinkJobProvider(pulumi.dynamic.ResourceProvider):
    """Dynamic provider of one streaming job per resource (contract: module docstring)."""

    serialize_as_secret_always = False  # it captures this module's source only

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        from infra.by_value import provider_by_value  # pickling runs in the program only

        return provider_by_value(type(self))

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        failures = []
        try:
            JobInputs.model_validate(known(news, INPUT_KEYS))
        except ValidationError as exc:
            unknown = {k for k in INPUT_KEYS if is_unknown(news.get(k))}
            failures = [pulumi.dynamic.CheckFailure(str(e["loc"][0]), str(e["msg"])) for e in exc.errors()
                        if str(e["loc"][0]) not in unknown]
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        spec = JobInputs.from_props(props)
        outputs = start(spec)
        return pulumi.dynamic.CreateResult(spec.job_name, outputs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old, new = known(olds, INPUT_KEYS), known(news, INPUT_KEYS)
        defaults = {name: f.default for name, f in JobInputs.model_fields.items()}
        changed = [k for k in INPUT_KEYS
                   if is_unknown(news.get(k)) or old.get(k, defaults.get(k)) != new.get(k, defaults.get(k))]
        lost = live_state(olds) not in ACTIVE_STATES  # a lost job is resubmitted by the next `pulumi up`
        return pulumi.dynamic.DiffResult(changes=bool(changed) or lost or code_changed(olds, news),
                                         replaces=[k for k in changed if k in REPLACE_KEYS],
                                         stables=[], delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        new = JobInputs.from_props(news)
        old = JobInputs.from_props(olds)
        old_id = str(olds.get("job_id", ""))
        if live_state(olds) in ACTIVE_STATES:
            changed = any(known(olds, INPUT_KEYS).get(k) != known(news, INPUT_KEYS).get(k) for k in SUBMIT_KEYS)
            if not changed:  # only record-only inputs changed
                return pulumi.dynamic.UpdateResult({**_outputs(new, old_id, str(olds.get("jar_id", "")),
                                                               str(olds.get("restored_from", "")), "RUNNING"),
                                                    "submitted_at": olds.get("submitted_at", _now())})
            savepoint = stop(old, old_id)
            same_lineage = old.checkpoint_dir == new.checkpoint_dir and old.savepoint_dir == new.savepoint_dir
            restore_from = savepoint if same_lineage and new.restore == "latest" and savepoint else None
            if restore_from is None and new.restore == "latest":
                restore_from = latest_state(new.checkpoint_dir, new.savepoint_dir, new.host_paths)
        else:
            restore_from = latest_state(new.checkpoint_dir, new.savepoint_dir, new.host_paths) \
                if new.restore == "latest" else None
            running = FlinkRest(new.rest_url).find(new.job_name)
            if running is not None:  # resubmitted by someone else meanwhile: adopt it
                FlinkRest(new.rest_url).wait_running(str(running["jid"]), new.ready_timeout_s)
                return pulumi.dynamic.UpdateResult(_outputs(new, str(running["jid"]), "", "adopted", "RUNNING"))
        job_id, jar_id = submit(new, restore_from)
        return pulumi.dynamic.UpdateResult(_outputs(new, job_id, jar_id, restore_from or "", "RUNNING"))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, {**props, "state": live_state(props)})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        spec = JobInputs.from_props(props)
        try:
            location = stop(spec, str(props.get("job_id", "")))
        except FlinkUnreachable:
            pulumi.log.info(f"{spec.job_name}: the job manager does not answer; nothing left to stop")
            return
        if location:
            pulumi.log.info(f"{spec.job_name}: stopped with savepoint {location}")


class FlinkJob(pulumi.dynamic.Resource, module="flink", name="FlinkJob"):
    """One streaming job on a Flink session cluster (contract: module docstring)."""

    job_id: pulumi.Output[str]
    """Flink's id of the running job (it changes on every submit)."""
    jar_id: pulumi.Output[str]
    state: pulumi.Output[str]
    """The job's state as Flink last reported it (``LOST``: Flink does not know the job)."""
    restored_from: pulumi.Output[str]
    """The savepoint or checkpoint the current run resumed from ('' for a fresh start)."""
    submitted_at: pulumi.Output[str]
    job_name: pulumi.Output[str]
    rest_url: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        rest_url: pulumi.Input[str],
        job_name: pulumi.Input[str],
        jar_path: pulumi.Input[str],
        jar_digest: pulumi.Input[str],
        entry_class: pulumi.Input[str],
        program_args: pulumi.Input[Sequence[pulumi.Input[str]]],
        checkpoint_dir: pulumi.Input[str],
        savepoint_dir: pulumi.Input[str],
        parallelism: pulumi.Input[int] = 1,
        host_paths: pulumi.Input[Mapping[str, str]] | None = None,
        restore: pulumi.Input[str] = "latest",
        state_version: pulumi.Input[int] = 1,
        ready_timeout_s: pulumi.Input[float] = 240.0,
        stop_timeout_s: pulumi.Input[float] = 120.0,
        labels: pulumi.Input[Mapping[str, str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "rest_url": rest_url, "job_name": job_name, "jar_path": jar_path, "jar_digest": jar_digest,
            "entry_class": entry_class, "program_args": program_args, "parallelism": parallelism,
            "checkpoint_dir": checkpoint_dir, "savepoint_dir": savepoint_dir, "host_paths": host_paths or {},
            "restore": restore, "state_version": state_version, "ready_timeout_s": ready_timeout_s,
            "stop_timeout_s": stop_timeout_s,
            "labels": labels or {},
            # Outputs only.
            "job_id": None, "jar_id": None, "state": None, "restored_from": None, "submitted_at": None,
        }
        super().__init__(FlinkJobProvider(), name, props, opts)
