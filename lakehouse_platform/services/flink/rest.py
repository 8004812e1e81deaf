"""Flink's REST API as the platform uses it: one client for the streaming job's provider, the smoke check and
the probes (submit, find, wait, stop with a savepoint, cancel, checkpoints)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests

from lakehouse_platform.providers import poll

#: The states of a job that is (still) a writer: stopping it is needed, submitting another is not.
ACTIVE_STATES = frozenset({"CREATED", "INITIALIZING", "RUNNING", "RESTARTING", "FAILING", "CANCELLING",
                           "RECONCILING"})
HTTP_TIMEOUT_S = 30.0
POLL_S = 1.0


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
