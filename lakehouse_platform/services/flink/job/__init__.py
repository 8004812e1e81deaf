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

Layout: ``inputs`` (the typed inputs), ``lineage`` (where the job's state is, on the host), ``lifecycle``
(submit, start, stop, the live state), ``provider`` (the provider and the resource); the REST client is
``lakehouse_platform.services.flink.rest``, the one the smoke check and the probes use too.

Serialization: like every provider of the project, by reference to its class (``lakehouse_platform.providers``).
"""


from __future__ import annotations

from lakehouse_platform.services.flink.job.inputs import INPUT_KEYS, REPLACE_KEYS, SUBMIT_KEYS, JobInputs
from lakehouse_platform.services.flink.job.lifecycle import live_state, start, stop, submit
from lakehouse_platform.services.flink.job.lineage import (
           GRAPH_MARKER,
           latest_state,
           record_graph,
           recorded_graph,
           to_flink,
           to_host,
)
from lakehouse_platform.services.flink.job.provider import FlinkJob, FlinkJobProvider
from lakehouse_platform.services.flink.rest import ACTIVE_STATES, FlinkJobError, FlinkRest, FlinkUnreachable

__all__ = ["ACTIVE_STATES", "GRAPH_MARKER", "INPUT_KEYS", "REPLACE_KEYS", "SUBMIT_KEYS", "FlinkJob",
           "FlinkJobError", "FlinkJobProvider", "FlinkRest", "FlinkUnreachable", "JobInputs", "latest_state",
           "live_state", "record_graph", "recorded_graph", "start", "stop", "submit", "to_flink", "to_host"]
