"""``LocalService``: a Pulumi dynamic resource that runs one platform service as a local process.

The ``native`` target runs every platform service (postgres, trino, ...) as a real process on
127.0.0.1. This package is the one place that knows how to start, health-check, restart and stop
such a process, so that ``pulumi up`` / ``refresh`` / ``destroy`` manage processes the same way
they manage cloud resources.

Layout
------
* ``inputs`` (the typed inputs, what a change of each means), ``processes`` (process identity,
  stopping a process tree), ``ports``, ``host`` (directories, files, the log, user and environment),
  ``health``, ``spawn`` (setup steps, the process under its watchdog) and ``lifecycle`` (start, stop,
  outputs) hold all the process logic as plain functions. They know nothing about Pulumi and are
  unit-tested directly against real processes.
* ``provider``: ``LocalServiceProvider`` maps the Pulumi CRUD calls onto those functions, and
  ``LocalService`` is the resource that Pulumi programs instantiate.

Lifecycle contract
------------------
create
    Refuse if any declared port is already bound on 127.0.0.1 (the error names the owning pid and
    command when it can be found). Create ``data_dir`` (mode 0700) and the log directory, write
    ``files`` (mode 0600, atomically), run the ``setup`` steps once (see below), then spawn the
    process detached (own session, stdin from /dev/null, stdout+stderr appended to ``log_file``)
    so it outlives ``pulumi up``. ``<data_dir>/.pid`` records ``"<pid> <create_time>"`` (first
    token is the pid, so shell tools can read it). Then wait for the health check; if the process
    exits or stays unhealthy for ``health_timeout_s``, it is stopped and the error carries the
    service name, the reason and the last 40 lines of its log.

    A live process recorded in ``<data_dir>/.pid`` while Pulumi has no record of the resource can
    only be an orphan of an interrupted run (Ctrl-C during a create), so create stops it first
    instead of failing on its ports forever.

setup
    Each ``setup`` argv (e.g. ``initdb``) runs once, before the first start, only while the marker
    ``<data_dir>/.local-service-setup-done`` is missing; its output goes to the log. Editing the
    ``setup`` list later does not re-run it (the marker is there): delete the marker (or the data
    dir) to run it again. Tools that insist on an empty directory (``initdb``) must be pointed
    at a sub-directory of ``data_dir``, because ``.pid`` and the marker live in ``data_dir``.

post_start
    Each ``post_start`` argv runs after every healthy start (create and restart), e.g. creating
    the warehouse bucket. Steps must be idempotent; a failing step stops the service and raises
    with the log tail, like a failed health check.

delete
    ``stop_signal`` (SIGTERM unless the service asks for another) to the process group and to
    every process of the service (its recursive children and every process still in its session,
    which catches double-forked daemons), wait ``stop_grace_s``, then SIGKILL whatever is left,
    then wait for the pids to be released. Processes are never matched by name, and a pid only
    counts as ours when its create_time matches the recorded one, so a reused pid is never
    signalled. The managed ``files`` (rendered config, possibly holding secrets) and ``.pid`` are
    removed. **``data_dir`` is kept**: it is the service's state (databases, catalogs), and
    destroying a stack must not destroy data; remove it by hand for a clean slate.

update (diff)
    Updates never replace the resource (so other services are not touched), except for its identity:
    a new ``service`` name is a replacement, deleting the old process before starting the new one
    (they would share ports). A change of anything the running process depends on (``argv``, ``env``,
    ``files``, ``health``, ``ports``, ``cwd``, ``log_file``, ``run_as_user``, ``ulimit_nofile``,
    ``data_dir``) restarts only this service: stop the recorded process, rewrite files, start, wait
    healthy. A new ``data_dir`` is such a restart too (the data moved there first: ``make up`` moves a
    stack's state directory before ``pulumi up``), never a replacement: a replacement's delete runs the
    provider code of the release that recorded the resource, which an upgrade in place has removed.
    ``health_timeout_s``, ``stop_grace_s`` and ``setup`` are recorded without a restart. Identical inputs
    give no diff, so a second ``pulumi up`` changes nothing. Values are compared after normalisation
    (protobuf turns ints into floats, secrets arrive unwrapped), so secrets compare by value.

refresh (read) of a dead service
    ``read`` checks the recorded pid *and* its create_time. If the process is gone (or the pid now
    belongs to another process), it reports ``alive: false`` and ``pid: 0`` (``started_at`` keeps
    the time of the last start), so ``pulumi refresh`` shows the drift. Any diff whose old state
    says ``alive: false`` is a change, so the next ``pulumi up`` restarts the service in place.
    ``diff`` also checks the recorded pid itself, so ``pulumi up`` converges (restarts a crashed
    service) even without a refresh; refresh is still what makes the drift visible in the state.
    The restart path stops whatever is left of the old process (including processes still in its
    session, found through ``.pid``) before starting a new one.

Secrets
    ``env`` values and ``files`` contents may be Pulumi secrets. The resource marks ``env`` and
    ``files`` as ``additional_secret_outputs`` so they are encrypted in the state. Neither is ever
    written to the log or put into an error message; the log headers name only the executable
    (``argv`` may hold secrets too, e.g. a password flag).

Environment
    The process gets a small fixed base environment (``INHERITED_ENV_VARS`` from the provider's
    own environment) plus ``env``. It deliberately does not inherit the whole environment of
    ``pulumi``, which holds e.g. ``PULUMI_CONFIG_PASSPHRASE``.

Serialization
    ``LocalServiceProvider`` pickles by value (``lakehouse_platform/by_value.py``, docs/adr/0015): the blob carries
    the sources of this package's modules it imports, the watchdog's and ``lakehouse_platform.by_value``'s, by
    module name and never by path, so any checkout (or none) can refresh and destroy what another
    deployed. The watchdog runs from a copy of its source in the service's data dir, on the base
    interpreter. The blob is deterministic and only changes when one of those modules changes.
"""

from __future__ import annotations

from lakehouse_platform.targets.native.local_service.errors import HealthPending, LocalServiceError, ServiceExited
from lakehouse_platform.targets.native.local_service.health import MAX_PROBE_TIMEOUT_S, probe_health, wait_healthy
from lakehouse_platform.targets.native.local_service.host import (
    INHERITED_ENV_VARS,
    LOG_TAIL_LINES,
    can_raise_hard_limits,
    remove_files,
    tail_log,
    write_files,
)
from lakehouse_platform.targets.native.local_service.inputs import (
    HEALTH_KINDS,
    INPUT_KEYS,
    LOOPBACK,
    PID_FILE_NAME,
    RECORD_ONLY_KEYS,
    REPLACE_KEYS,
    RESTART_KEYS,
    SETUP_MARKER_NAME,
    CommandHealth,
    HealthCheck,
    HttpHealth,
    RestartPolicy,
    ServiceInputs,
    TcpHealth,
    input_view,
    validate_props,
)
from lakehouse_platform.targets.native.local_service.lifecycle import start_service, stop_service
from lakehouse_platform.targets.native.local_service.ports import (
    ensure_ports_free,
    port_is_free,
    port_owner,
    port_owner_pid,
)
from lakehouse_platform.targets.native.local_service.processes import (
    KILL_WAIT_S,
    ProcessRecord,
    process_matches,
    reap,
    service_processes,
    stop_process_tree,
)
from lakehouse_platform.targets.native.local_service.provider import (
    SECRET_OUTPUTS,
    LocalService,
    LocalServiceProvider,
    resource_options,
)
from lakehouse_platform.targets.native.local_service.spawn import arm_watchdog, run_post_start, run_setup, spawn_service

__all__ = [
    "HEALTH_KINDS", "INHERITED_ENV_VARS", "INPUT_KEYS", "KILL_WAIT_S", "LOG_TAIL_LINES", "LOOPBACK",
    "MAX_PROBE_TIMEOUT_S", "PID_FILE_NAME", "RECORD_ONLY_KEYS", "REPLACE_KEYS", "RESTART_KEYS", "SECRET_OUTPUTS",
    "SETUP_MARKER_NAME", "CommandHealth", "HealthCheck", "HealthPending", "HttpHealth", "LocalService",
    "LocalServiceError", "LocalServiceProvider", "ProcessRecord", "RestartPolicy", "ServiceExited", "ServiceInputs",
    "TcpHealth", "arm_watchdog", "can_raise_hard_limits", "ensure_ports_free", "input_view", "port_is_free",
    "port_owner", "port_owner_pid", "probe_health", "process_matches", "reap", "remove_files", "resource_options",
    "run_post_start", "run_setup", "service_processes", "spawn_service", "start_service", "stop_process_tree",
    "stop_service", "tail_log", "validate_props", "wait_healthy", "write_files",
]
