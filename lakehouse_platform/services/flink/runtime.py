"""Stop the streaming job with a savepoint before its job manager or task manager stops for an update.

Natively each Flink manager's ``LocalService`` runs this as its ``pre_stop`` step: a session cluster without HA
forgets its jobs when the job manager restarts, and a task manager that goes away fails the job over. Taking the
savepoint first (``POST /jobs/<id>/stop``: it commits what the job wrote) means the job the next ``pulumi up``
resubmits (``FlinkJob``: from its lineage's newest state) restores from that savepoint, not from an older
checkpoint. Both managers may run it during one update: whichever comes second finds the job stopping or stopped
and waits. Best effort by design (the exit code is always 0): without a savepoint the job still resumes from its
newest retained checkpoint, exactly once.

The same ``pulumi up`` may be restarting what the job writes to (the store, the catalog) at that moment: the job
then fails over and a savepoint fails ("Task has failed"). So a failed stop is tried again once the job runs again
(every task RUNNING), until the timeout: seen in the upgrade test, where SeaweedFS restarted beside the job manager.

Runtime code: it runs on the operations runtime from the stack's copy of the runtime code (ADR 0016), so it carries the
few REST calls it needs itself (the deployment's full client is ``lakehouse_platform.services.flink.rest``).

    python -m lakehouse_platform.services.flink.runtime <rest url> <job name> <savepoint dir> [timeout seconds]
"""

from __future__ import annotations

import sys
import time
from typing import Any

import requests

#: Job states in which the job still writes (the same set as ``lakehouse_platform.services.flink.rest.ACTIVE_STATES``).
ACTIVE_STATES = frozenset({"CREATED", "INITIALIZING", "RUNNING", "RESTARTING", "FAILING", "CANCELLING",
                           "RECONCILING"})
POLL_S = 1.0


class DrainError(Exception):
    """Flink did not answer or refused the stop; the message says which call."""


class Rest:
    """The calls a drain makes: list jobs, stop one with a savepoint, follow it to the end."""

    def __init__(self, url: str, timeout_s: float = 10.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.trust_env = False  # the job manager is on this host: never through a proxy

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.session.request(method, f"{self.url}{path}", timeout=self.timeout_s, **kwargs)
        except requests.RequestException as exc:
            raise DrainError(f"Flink REST {self.url} does not answer ({type(exc).__name__})") from None
        if response.status_code >= 300:
            raise DrainError(f"{method} {path} answered {response.status_code}: {response.text[:300]}")
        return response.json() if response.content else {}

    def jobs(self) -> list[dict[str, Any]]:
        return list(self.call("GET", "/jobs/overview").get("jobs", []))

    def state(self, job_id: str) -> str:
        try:
            return str(self.call("GET", f"/jobs/{job_id}").get("state", "UNKNOWN"))
        except DrainError:
            return "GONE"

    def running(self, job_id: str) -> bool:
        """The job and every one of its tasks RUNNING (a savepoint can only be taken then)."""
        try:
            job = self.call("GET", f"/jobs/{job_id}")
        except DrainError:
            return False
        vertices = [v.get("status") for v in job.get("vertices", [])]
        return job.get("state") == "RUNNING" and bool(vertices) and all(v == "RUNNING" for v in vertices)

    def wait_terminal(self, job_id: str, wait_s: float) -> str:
        deadline = time.monotonic() + wait_s
        while (state := self.state(job_id)) in ACTIVE_STATES and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return state

    def stop_with_savepoint(self, job_id: str, target_dir: str, wait_s: float) -> str:
        """A final savepoint (it commits), then FINISHED; the savepoint's location."""
        request_id = self.call("POST", f"/jobs/{job_id}/stop",
                               json={"drain": False, "targetDirectory": target_dir})["request-id"]
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            status = self.call("GET", f"/jobs/{job_id}/savepoints/{request_id}")
            if (status.get("status") or {}).get("id") == "COMPLETED":
                operation = status.get("operation") or {}
                if operation.get("location"):
                    self.wait_terminal(job_id, 30.0)
                    return str(operation["location"])
                raise DrainError(f"stop-with-savepoint of {job_id} failed: {str(operation.get('failure-cause'))[:300]}")
            time.sleep(POLL_S)
        raise DrainError(f"stop-with-savepoint of {job_id} did not complete within {wait_s:g}s")


def stop_when_running(rest: Rest, job_id: str, savepoint_dir: str, timeout_s: float) -> str:
    """Stop-with-savepoint, tried again while the job is still active (it fails over while a dependency restarts)
    until ``timeout_s``; what happened."""
    deadline = time.monotonic() + timeout_s
    last = "the job never ran with every task RUNNING"
    attempts = 0
    while (remaining := deadline - time.monotonic()) > 0:
        state = rest.state(job_id)
        if state not in ACTIVE_STATES:
            return f"{state} (ended before a savepoint was taken: {last})" if attempts else f"already {state}"
        if rest.running(job_id):
            attempts += 1
            try:
                location = rest.stop_with_savepoint(job_id, savepoint_dir, remaining)
                return f"savepoint {location}" + (f" (attempt {attempts})" if attempts > 1 else "")
            except DrainError as exc:  # failing over, or another drain stops it already: look again
                last = str(exc)
        time.sleep(2 * POLL_S)
    return f"no savepoint within {timeout_s:g}s ({attempts} attempts; last: {last}); now {rest.state(job_id)}"


def drain(rest_url: str, job_name: str, savepoint_dir: str, timeout_s: float) -> list[str]:
    """Stop every active job called ``job_name`` with a savepoint into ``savepoint_dir``; what happened to each."""
    rest = Rest(rest_url)
    return [f"{job['jid']}: {stop_when_running(rest, str(job['jid']), savepoint_dir, timeout_s)}"
            for job in rest.jobs() if job.get("name") == job_name and job.get("state") in ACTIVE_STATES]


def main(argv: list[str]) -> int:
    rest_url, job_name, savepoint_dir = argv[:3]
    timeout_s = float(argv[3]) if len(argv) > 3 else 120.0
    try:
        for line in drain(rest_url, job_name, savepoint_dir, timeout_s) or [f"no active job {job_name}"]:
            print(f"drain: {line}", flush=True)
    except DrainError as exc:
        print(f"drain: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
