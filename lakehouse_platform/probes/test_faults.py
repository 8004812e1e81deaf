"""Faults the platform must survive: a SIGKILL of the catalog mid-commit, a stopped store.

1. kill -9 of the catalog while writers commit (catalog). Its supervisor restarts it by itself (no
   `pulumi up`): natively the service's watchdog, in the lab the engine's restart policy (the container's
   main process killed by its host pid: a crash to the engine); writers retry what a real client retries — a 409, or a connection error after
   checking whether their commit landed (every commit carries an id in its snapshot summary, so a
   retry is never a duplicate). Afterwards every acknowledged commit is in the snapshot log, every
   batch is in the table exactly once, the table reads back whole, and no client saw a 5xx.
2. The store stopped (storage): a commit fails with a clear error naming the store, the catalog
   pointer does not move, and once the store is back (natively `pulumi up`, in the lab `docker start`) the
   table reads back unchanged.

Both act through ``support.control``: natively on processes by their recorded pids (stack outputs + the
watchdog's status), in the lab on containers through Docker (``docker stop``/``docker start``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest
import requests
import tenacity

from lakehouse_platform.probes.support import commits, control, services
from lakehouse_platform.probes.support.stack import Stack, fail
from lakehouse_platform.services.capabilities import STORE

WRITERS = 4
RUN_S = 30.0
KILL_AFTER_S = 6.0
# The supervisor's first backoff (the watchdog's 1 s, the engine's 100 ms) + the fixture's JVM start, with margin.
HEAL_BOUND_S = 60.0
COMMIT_ID = "lakehouse.probe.commit-id"


@dataclass
class Tally:
    """What the writers saw: acknowledged commits, and every answer by kind."""

    acknowledged: list[commits.Commit] = field(default_factory=list)
    conflicts: int = 0
    connection_errors: int = 0
    reconciled: int = 0  # a commit found already landed after a connection error (not retried)
    errors: list[str] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    server_errors: list[str] = field(default_factory=list)
    #: When each 5xx came, and whether it was the gate saying its catalog did not answer (the gate's form
    #: of a connection error: allowed while the catalog is down, never once it is back).
    five_xx_at: list[tuple[float, bool]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


#: The catalog gate's answer when the catalog behind it did not answer (lakehouse_platform/runtime/catalog_gate.py).
GATE_UNREACHABLE = "the catalog behind the gate did not answer"


def _unreachable(exc: BaseException) -> bool:
    """A lost answer: no connection to the catalog (directly, or the gate's 502 for it)."""
    return isinstance(exc, requests.ConnectionError) or GATE_UNREACHABLE in str(exc)


def _track_five_xx(catalog, tally: Tally) -> None:
    def hook(response, *args, **kwargs):
        if response.status_code >= 500:
            with tally.lock:
                tally.five_xx_at.append((time.monotonic(), GATE_UNREACHABLE in response.text))
        return response

    catalog._session.hooks["response"].append(hook)


def _new_table(stack: Stack, ident: str, created_tables: list[str]):
    """A fresh table for one probe (its namespace shared by both probes of this run)."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    catalog = stack.catalog()
    try:
        catalog.create_namespace(ident.split(".")[0])
    except NamespaceAlreadyExistsError:
        pass
    table = catalog.create_table(ident, commits._schema())
    created_tables.append(ident)
    return catalog, table


def _landed(catalog, ident: str, commit_id: str) -> int | None:
    """The snapshot that carries ``commit_id``, if the commit landed (read after a lost answer)."""
    for snapshot in catalog.load_table(ident).snapshots():
        if snapshot.summary is not None and snapshot.summary.get(COMMIT_ID) == commit_id:
            return snapshot.snapshot_id
    return None


def _writer(stack: Stack, ident: str, name: str, deadline: float, tally: Tally) -> None:
    from pyiceberg.exceptions import CommitFailedException

    outcome = commits.Outcome(table=ident)
    catalog = stack.catalog()
    commits.instrument(catalog, outcome, tally.lock)
    _track_five_xx(catalog, tally)
    seq = 0
    while time.monotonic() < deadline:
        commit_id, rows = f"{name}#{seq}", commits._rows(name, seq, 10)
        started, attempts = time.monotonic(), 0
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(lambda e: isinstance(e, CommitFailedException) or _unreachable(e)),
            stop=tenacity.stop_after_delay(HEAL_BOUND_S + 30),
            wait=tenacity.wait_random_exponential(multiplier=0.1, max=2.0), reraise=True)
        try:
            for attempt in retrying:
                with attempt:
                    attempts += 1
                    try:
                        table = catalog.load_table(ident)
                        table.append(rows, snapshot_properties={COMMIT_ID: commit_id})
                        snapshot_id = table.current_snapshot().snapshot_id
                    except CommitFailedException:
                        with tally.lock:
                            tally.conflicts += 1
                        raise
                    except Exception as exc:
                        if not _unreachable(exc):
                            raise
                        with tally.lock:
                            tally.connection_errors += 1
                        landed = _reconcile(catalog, ident, commit_id)
                        if landed is None:
                            raise
                        snapshot_id = landed
                        with tally.lock:
                            tally.reconciled += 1
        except Exception as exc:  # noqa: BLE001 - anything else (a 5xx, a timeout past the bound) is the finding
            with tally.lock:
                tally.errors.append(f"{commit_id}: {type(exc).__name__}: {str(exc)[:400]}")
            break
        with tally.lock:
            tally.acknowledged.append(commits.Commit(name, seq, 10, snapshot_id, attempts, time.monotonic() - started))
        seq += 1
    with tally.lock:
        for code, count in outcome.statuses.items():
            tally.statuses[code] = tally.statuses.get(code, 0) + count
        tally.server_errors += outcome.server_errors


def _reconcile(catalog, ident: str, commit_id: str) -> int | None:
    """After a lost answer: did the commit land? Asked until the catalog answers again."""
    for attempt in tenacity.Retrying(retry=tenacity.retry_if_exception(_unreachable),
                                     stop=tenacity.stop_after_delay(HEAL_BOUND_S), wait=tenacity.wait_fixed(0.5),
                                     reraise=True):
        with attempt:
            return _landed(catalog, ident, commit_id)
    return None


@pytest.mark.catalog
@pytest.mark.disruptive("SIGKILLs the catalog while 4 writers commit")
def test_kill_9_of_the_catalog_mid_commit_loses_no_acknowledged_commit(stack: Stack, created_tables, figure, say):
    ctl = control.control(stack)
    catalog_service = services.default_catalog(stack)  # the catalog every engine commits through
    try:
        ctl.can_crash(catalog_service)
    except control.Unsupported as exc:
        pytest.skip(str(exc))
    except control.ServiceControlError as exc:
        fail(stack, "catalog", f"{catalog_service} has no running service process to kill", str(exc))
    before = ctl.instance(catalog_service)
    ident = f"faults_{stack.run_id}.kill9"
    _new_table(stack, ident, created_tables)

    tally, deadline = Tally(), time.monotonic() + RUN_S
    threads = [threading.Thread(target=_writer, args=(stack, ident, f"w{i}", deadline, tally)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    time.sleep(KILL_AFTER_S)
    acknowledged_at_kill = len(tally.acknowledged)
    victim = ctl.crash(catalog_service)
    killed_at = time.monotonic()
    healed_in = None
    while time.monotonic() - killed_at < HEAL_BOUND_S:
        now = ctl.instance(catalog_service)
        if now.running and not now.same_as(victim) and _answers(stack):
            healed_in = time.monotonic() - killed_at
            break
        time.sleep(0.2)
    for thread in threads:
        thread.join(RUN_S + HEAL_BOUND_S + 60)
    after = ctl.instance(catalog_service)
    supervisor = "its watchdog" if ctl.target == "native" else "the engine's restart policy"
    say(f"== kill -9 of {catalog_service} ({victim.ident}, pid {victim.detail.get('pid')}) after {acknowledged_at_kill} "
        f"commits; healed by {supervisor} in {healed_in if healed_in is None else round(healed_in, 1)} s "
        f"(restarts {before.restarts or 0} -> {after.restarts}); {len(tally.acknowledged)} commits acknowledged, "
        f"{tally.conflicts} 409s, "
        f"{tally.connection_errors} lost answers retried ({tally.reconciled} had landed), statuses "
        f"{dict(sorted(tally.statuses.items()))}")
    if healed_in is None:
        fail(stack, "catalog", f"{catalog_service} did not come back by itself within {HEAL_BOUND_S:.0f} s of a SIGKILL",
             {"before": str(before), "after": str(after), "supervisor": after.detail})
    outcome = commits.Outcome(table=ident, commits=tally.acknowledged, errors=tally.errors)
    # The gate's 502s while the catalog was down are the lost answers the writers retried; any other 5xx,
    # or any 5xx once the catalog answered again, is a finding.
    healed_at = killed_at + healed_in
    outage = sum(1 for at, gate in tally.five_xx_at if gate and at <= healed_at + 1.0)
    statuses = dict(tally.statuses)
    if outage:
        statuses[502] -= outage
        statuses = {code: n for code, n in statuses.items() if n}
    outcome.statuses.update(statuses)
    outcome.server_errors = tally.server_errors if outcome.five_xx else []
    commits.verify(stack.catalog(), outcome)
    figure(f"SIGKILL mid-commit: healed in {healed_in:.1f} s, {len(tally.acknowledged)} acknowledged commits all "
           f"present, {outcome.five_xx} 5xx, {tally.connection_errors} lost commit answers retried; {outage} "
           "answers were the gate's 502 while the catalog was down")
    if len(tally.acknowledged) <= acknowledged_at_kill:
        fail(stack, "catalog", "no commit was acknowledged after the catalog came back", outcome.summary())
    if outcome.problems:
        fail(stack, "catalog", "the catalog lost or corrupted commits across a SIGKILL, or answered 5xx",
             {"problems": outcome.problems, "errors": tally.errors[:5], "5xx": tally.server_errors[:3],
              "verified": outcome.verified})


def _answers(stack: Stack) -> bool:
    """The catalog answers ``/v1/config`` where clients reach it (through its gate, with the profile's token)."""
    props = stack.pyiceberg_props()
    headers = {"Authorization": f"Bearer {props['token']}"} if props.get("token") else {}
    try:
        return requests.get(f"{props['uri'].rstrip('/')}/v1/config", timeout=2, headers=headers).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.storage
@pytest.mark.disruptive("stops the store")
def test_a_commit_with_the_store_stopped_fails_clearly_and_the_pointer_does_not_move(stack: Stack, created_tables,
                                                                                  figure, say):
    ctl = control.control(stack, starts_again=True)
    store = services.provider(stack, STORE)
    if store is None:
        pytest.skip("this stack runs no store of its own (aws: S3 itself)")
    ident = f"faults_{stack.run_id}.store"
    catalog, table = _new_table(stack, ident, created_tables)
    table.append(commits._rows("before", 0, 100))
    pointer = catalog.load_table(ident).metadata_location

    # The writer has loaded its table (as a running job has) before the store stops.
    writer = stack.catalog(**{"s3.connect-timeout": "5", "s3.request-timeout": "10"}).load_table(ident)
    # Natively SIGTERM of its tree (the watchdog stops and does not restart it); in the lab `docker stop`.
    ctl.stop(store)
    try:
        started = time.monotonic()
        error = None
        try:
            writer.append(commits._rows("during", 0, 10))
        except Exception as exc:  # noqa: BLE001 - the error itself is what the probe reads
            error = f"{type(exc).__name__}: {exc}"
        seconds = time.monotonic() - started
        say(f"== with {store} stopped, a commit failed after {seconds:.1f} s: {str(error)[:300]}")
    finally:
        back_s = ctl.start(store)  # back through the target (natively `pulumi up`, the lab `docker start`), healthy
    if error is None:
        fail(stack, "storage", "a commit was acknowledged while the store was stopped", {"table": ident})
    if not any(word in error.lower() for word in ("connect", "refused", "unreachable", "timed out", "timeout")):
        fail(stack, "storage", "with the store stopped, a commit failed without saying the store is unreachable", error)
    moved = stack.catalog().load_table(ident).metadata_location
    if moved != pointer:
        fail(stack, "storage", "the catalog pointer moved although the commit could not write its files",
             {"before": pointer, "after": moved})
    rows = stack.catalog().load_table(ident).scan().to_arrow().num_rows
    figure(f"store stopped: the commit failed in {seconds:.1f} s naming the store; pointer unmoved; {rows} rows after "
           f"it was back ({back_s:.0f} s)")
    if rows != 100:
        fail(stack, "storage", f"after the store came back the table holds {rows} rows, not 100", {"table": ident})
