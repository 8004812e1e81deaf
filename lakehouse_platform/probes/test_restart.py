"""Probe 4 — the catalog survives a restart with every table intact (catalog).

Before: every table's metadata location and current snapshot (a table a live writer commits to,
like the streaming job's, may move on meanwhile: intact when its new metadata descends from the old).
Then the catalog service is restarted through the target (``support.control``: natively stopped by its
recorded pid, then ``pulumi up`` starts it again and waits for health; in the lab ``docker restart`` of its
container, then its health check; or the command given with ``--restart-command``; where the target has no
restart here the probe skips and says why). While it restarts, ``/v1/config`` is polled to measure the
outage. After: every table resolves to the same metadata file and snapshot, the probe's tables still
read the same row counts, and a short burst of concurrent commits (~8 s) gets no 5xx.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
import time

import pytest
import requests

from lakehouse_platform.probes.support import commits, control, services
from lakehouse_platform.probes.support.stack import Stack, fail

pytestmark = [pytest.mark.catalog, pytest.mark.disruptive("restarts the catalog")]

RESTART_TIMEOUT_S = 600
MAX_TABLES = 500
POST_RESTART_COMMIT_S = 8.0


def restart_argv(stack: Stack, template: str, service: str) -> list[str]:
    """The ``--restart-command`` restarting ``service``, with ``{service}`` and ``{stack}`` substituted."""
    return shlex.split(template.format(service=service, stack=stack.name or ""))


def descends(table, metadata_location: str, snapshot_id: int | None) -> bool:
    """True when ``table``'s current metadata carries on from (``metadata_location``, ``snapshot_id``)."""
    logged = {entry.metadata_file for entry in table.metadata.metadata_log}
    if metadata_location not in logged:
        return False
    if snapshot_id is None:
        return True
    by_id = {s.snapshot_id: s for s in table.snapshots()}
    snapshot = table.current_snapshot()
    while snapshot is not None:
        if snapshot.snapshot_id == snapshot_id:
            return True
        snapshot = by_id.get(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return False


def catalog_state(catalog) -> dict[str, tuple[str, int | None]]:
    state: dict[str, tuple[str, int | None]] = {}
    for namespace in catalog.list_namespaces():
        for ident in catalog.list_tables(namespace):
            name = ".".join(ident)
            table = catalog.load_table(name)
            snapshot = table.current_snapshot()
            state[name] = (table.metadata_location, snapshot.snapshot_id if snapshot else None)
            if len(state) >= MAX_TABLES:
                return state
    return state


class Outage:
    """Polls the catalog's /v1/config every 200 ms; measures how long it did not answer 200."""

    def __init__(self, uri: str, headers: dict[str, str] | None = None):
        self.uri = uri.rstrip("/") + "/v1/config"
        self.headers = headers or {}
        self.down_since: float | None = None
        self.down_total = 0.0
        self.failed_polls = 0
        self.polls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        session = requests.Session()
        session.trust_env = False
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                ok = session.get(self.uri, timeout=1, headers=self.headers).status_code == 200
            except requests.RequestException:
                ok = False
            self.polls += 1
            if not ok:
                self.failed_polls += 1
                self.down_since = self.down_since or now
            elif self.down_since is not None:
                self.down_total += now - self.down_since
                self.down_since = None
            self._stop.wait(0.2)

    def __enter__(self) -> Outage:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        if self.down_since is not None:
            self.down_total += time.monotonic() - self.down_since


def wait_healthy(uri: str, timeout_s: float = 120, headers: dict[str, str] | None = None) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if requests.get(uri.rstrip("/") + "/v1/config", timeout=2, headers=headers or {}).status_code == 200:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.5)
    return False


def restart(stack: Stack, template: str | None, ctl: control.ServiceControl | None) -> tuple[bool, object]:
    """Restart the catalog: the ``--restart-command``, else through the target; (succeeded, evidence)."""
    service = services.default_catalog(stack)
    if template:
        argv = restart_argv(stack, template, service)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RESTART_TIMEOUT_S)
        return done.returncode == 0, {"command": argv, "exit": done.returncode, "stdout": done.stdout[-1500:],
                                      "stderr": done.stderr[-1500:]}
    assert ctl is not None
    try:
        return True, {"restarted": ctl.describe(service), "seconds": round(ctl.restart(service), 1)}
    except control.ServiceControlError as exc:
        return False, {"restarted": ctl.describe(service), "error": str(exc)[-1500:]}


def test_catalog_survives_a_restart_with_every_table_intact(stack: Stack, created_tables, figure, say, request):
    template = request.config.getoption("--restart-command")
    ctl = control.control(stack, starts_again=True) if not template else control.control_or_none(stack)[0]
    uri = (stack.host_profiles.get("pyiceberg") or {}).get("uri", "")
    catalog = stack.catalog()
    before = catalog_state(catalog)
    counts_before = {ident: catalog.load_table(ident).scan().to_arrow().num_rows
                     for ident in created_tables if ident in before}
    service = services.default_catalog(stack)
    old = ctl.instance(service) if ctl else None

    started = time.monotonic()
    headers = stack.catalog_headers()
    with Outage(uri, headers) as outage:
        ok, evidence = restart(stack, template, ctl)
        healthy = wait_healthy(uri, headers=headers)
    seconds = time.monotonic() - started
    if not ok or not healthy:
        fail(stack, "catalog", f"restarting {service} failed (healthy={healthy})", evidence)
    stack.reload()
    new = ctl.instance(service) if ctl else None
    if old is not None and new is not None and new.same_as(old):
        fail(stack, "catalog", f"the restart returned but {service} is the same instance ({old})", evidence)

    catalog = stack.catalog()
    after = catalog_state(catalog)
    lost = sorted(set(before) - set(after))
    moved = {ident: {"before": before[ident], "after": after[ident]}
             for ident in before if ident in after and after[ident] != before[ident]}
    # A table with a live writer (the streaming job commits every checkpoint) moves on during the restart:
    # intact when its new metadata descends from the old one (the old file in its metadata log, the old
    # snapshot an ancestor of the current one); anything else points elsewhere.
    advanced = {ident for ident in moved if descends(catalog.load_table(ident), *before[ident])}
    changed = {ident: moved[ident] for ident in moved if ident not in advanced}
    counts_after = {ident: catalog.load_table(ident).scan().to_arrow().num_rows for ident in counts_before}
    say(f"== {service} restarted ({old.ident if old else '?'} -> {new.ident if new else '?'}, started "
        f"{new.started if new else '?'}) in {seconds:.1f}s; catalog unanswered "
        f"{outage.down_total:.1f}s ({outage.failed_polls}/{outage.polls} polls)")
    say(f"== {len(before)} tables before, {len(after)} after; {len(lost)} lost, {len(changed)} changed, "
        f"{len(advanced)} advanced by a live writer ({', '.join(sorted(advanced)) or 'none'}); row counts {counts_after}")
    figure(f"{len(after)}/{len(before)} tables intact, {len(changed)} changed, outage {outage.down_total:.1f}s, "
           f"restart {seconds:.0f}s")
    if lost or changed:
        fail(stack, "catalog", f"after a restart {len(lost)} table(s) are gone and {len(changed)} point elsewhere",
             {"lost": lost[:20], "changed": dict(list(changed.items())[:10])})
    if counts_after != counts_before:
        fail(stack, "catalog", "tables read different row counts after the restart",
             {"before": counts_before, "after": counts_after})

    # A restarted catalog must also still take concurrent commits (the file-backed fixture did not:
    # 500 SQLITE_BUSY after a restart with its default connection pool).
    ident = f"probe_{stack.run_id}.after_restart"
    created_tables.append(ident)
    log_file = stack.service_record(service).get("log_file")
    offset = commits.log_size(log_file)
    outcome = commits.run(lambda: stack.catalog(), ident, commits.Workload(duration_s=POST_RESTART_COMMIT_S,
                                                                            stream_interval_s=1.0))
    outcome.log_evidence += [f"catalog log: {line}" for line in commits.grep_log(log_file, "SQLITE_", offset, 3)]
    say(f"== after the restart: {outcome.summary()}")
    figure(f"{len(after)}/{len(before)} tables intact, outage {outage.down_total:.1f}s, restart {seconds:.0f}s; "
           f"after it {len(outcome.commits)} concurrent commits, {outcome.five_xx} 5xx")
    if not outcome.ok:
        fail(stack, "catalog", "after the restart the catalog no longer takes concurrent commits cleanly",
             {"summary": outcome.summary(), "status codes": dict(sorted(outcome.statuses.items())),
              "problems": outcome.problems, "errors": outcome.errors[:3],
              "5xx bodies": [b[:400] for b in outcome.server_errors[:2]], "log": outcome.log_evidence})
