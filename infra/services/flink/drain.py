"""Stop the streaming job with a savepoint before its job manager or task manager stops for an update.

Natively each manager's ``LocalService`` runs this as its ``pre_stop`` step: a session cluster without HA forgets
its jobs when the job manager restarts, and a task manager that goes away fails the job over. Taking the savepoint
first (``POST /jobs/<id>/stop``: it commits what the job wrote) means the job the next ``pulumi up`` resubmits
(``FlinkJob``: from its lineage's newest state) restores from that savepoint, not from an older checkpoint. Both
managers may run it during one update: whichever comes second finds the job stopping or stopped and waits.
Best effort by design (the exit code is always 0): without a savepoint the job still resumes from its newest
retained checkpoint, exactly once.

    python -m infra.services.flink.drain <rest url> <job name> <savepoint dir> [timeout seconds]
"""

from __future__ import annotations

import sys

from infra.services.flink.job import ACTIVE_STATES, FlinkJobError, FlinkRest


def drain(rest_url: str, job_name: str, savepoint_dir: str, timeout_s: float) -> list[str]:
    """Stop every active job called ``job_name`` with a savepoint into ``savepoint_dir``; what happened to each."""
    rest = FlinkRest(rest_url, timeout_s=10.0)
    done = []
    for job in rest.jobs():
        if job.get("name") != job_name or job.get("state") not in ACTIVE_STATES:
            continue
        job_id = str(job["jid"])
        try:
            done.append(f"{job_id}: savepoint {rest.stop_with_savepoint(job_id, savepoint_dir, timeout_s)}")
        except FlinkJobError as exc:  # another drain stops it already, or the savepoint failed: wait for the end
            done.append(f"{job_id}: {exc}; now {rest.wait_terminal(job_id, timeout_s)}")
    return done


def main(argv: list[str]) -> int:
    rest_url, job_name, savepoint_dir = argv[:3]
    timeout_s = float(argv[3]) if len(argv) > 3 else 120.0
    try:
        for line in drain(rest_url, job_name, savepoint_dir, timeout_s) or [f"no active job {job_name}"]:
            print(f"drain: {line}", flush=True)
    except FlinkJobError as exc:
        print(f"drain: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
