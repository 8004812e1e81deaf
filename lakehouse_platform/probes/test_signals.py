"""Probe — signals someone watches: freshness, table health and catalog health, from metadata to a firing alert
(observability).

Freshness and health: the writer makes a table whose promise is one minute (the
``platform.freshness-minutes`` property tables-as-code writes for a declared table) and commits once,
and a table with many small files. The exporter reports both (promise, small files); a maintenance run
that fails (``expire_snapshots`` below Trino's minimum retention) raises MaintenanceFailed; compaction
and a correct expiry run (Trino procedures as the platform's identity, recorded in the run record the
scheduler writes) bring the small files down and resolve it; the one-minute table goes stale and
TableStale fires in Prometheus within its bound (``for`` + a scrape + an evaluation after the promise
runs out); a new commit resolves it.

Catalog down, two ways: the catalog is stopped (natively its process by the recorded pid, in the lab
``docker stop``: connections are refused), and the catalog hangs (natively SIGSTOP, in the lab ``docker
pause``: connections are accepted and never answered, so every probe waits out its timeout). Either way
CatalogDown must fire within ``observability.catalog_down_bound_s`` (the exporter's probe interval + its
request timeout + a scrape + an evaluation + the rule's ``for``), and resolve once the catalog is back
(started again through the target: ``pulumi up`` | ``docker start``; SIGCONT | ``docker unpause``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakehouse_platform.probes.support import control, services, signals
from lakehouse_platform.probes.support import operations as ops
from lakehouse_platform.probes.support.stack import Stack, fail
from lakehouse_platform.services.capabilities import METRICS, SIGNALS, SQL_ENGINE

pytestmark = [pytest.mark.observability]

PROMISE_MINUTES = 1
SMALL_FILES = 30
#: Scheduling slack on a loaded host, on top of each bound the stack declares.
SLACK_S = 5.0
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("value", pa.string())])


def batch(start: int, count: int = 1) -> pa.Table:
    return pa.table({"id": list(range(start, start + count)), "value": [f"v{i}" for i in range(count)]}, schema=SCHEMA)


def endpoints(stack: Stack) -> tuple[str, str, dict[str, Any]]:
    obs = signals.observability(stack.outputs)
    prometheus, exporter = services.metrics_url(stack, METRICS), services.metrics_url(stack, SIGNALS)
    if not prometheus or not exporter:
        pytest.skip("this stack exports no metrics store and exporter endpoints (observability output)")
    return prometheus, exporter, obs


def platform_identity(stack: Stack) -> str:
    for name, creds in (stack.credentials.get("identities") or {}).items():
        if creds.get("role") == "platform":
            return name
    pytest.skip("the stack's credentials name no platform identity (maintenance runs as it)")


def maintain(stack: Stack, identity: str, job: str, ident: str, statements: list[str]) -> tuple[str, str]:
    """Run one maintenance job on demand through Trino, recorded in the stack's run record: (status, detail)."""
    from lakehouse_platform.runtime import runs

    record = Path(ops.operations(stack)["runs_db"])  # the stack's run record, as this host reaches it
    engine = services.engine_of(stack, SQL_ENGINE)
    if engine is None:
        pytest.skip("this stack runs no SQL engine (Trino): maintenance runs through one")
    run = runs.start(record, runs.Run(job=job, target=ident, trigger="on-demand", engine=engine.name))
    namespace, table = ident.split(".", 1)
    cursor = engine.cursor(identity=identity)
    try:
        for statement in statements:
            cursor.execute(statement.format(table=f'"{namespace}"."{table}"', catalog=engine.catalog_of(identity)))
            cursor.fetchall()
    except Exception as exc:  # noqa: BLE001 - a failed run is recorded as failed: that is the point
        detail = " ".join(str(exc).split())[:300]
        runs.finish(record, run, "failed", error=detail)
        return "failed", detail
    runs.finish(record, run, "ok")
    return "ok", ""


@pytest.mark.disruptive("makes TableStale and MaintenanceFailed fire on the stack's Prometheus (a page wherever "
                        "alerts are routed) and writes maintenance runs into its run record")
def test_freshness_and_table_health_signals_fire_and_recover(stack: Stack, created_tables, figure, say):
    prometheus, exporter, obs = endpoints(stack)
    if not ops.operations(stack).get("runs_db"):
        pytest.skip("the stack's run record is not on this host (operations.runs_db): the probe records its "
                    "maintenance runs there")
    refresh, scrape, stale_for = obs["refresh_interval_s"], obs["scrape_interval_s"], obs["table_stale_for_s"]
    admin = platform_identity(stack)
    namespace = f"probe_{stack.run_id}_sig"
    fresh, small = f"{namespace}.fresh", f"{namespace}.small"
    catalog = stack.catalog()
    catalog.create_namespace(namespace)
    created_tables += [fresh, small]
    table = catalog.create_table(fresh, schema=SCHEMA, properties={"platform.freshness-minutes": str(PROMISE_MINUTES)})
    table.append(batch(0, 10))
    committed = table.current_snapshot().timestamp_ms / 1000
    many = catalog.create_table(small, schema=SCHEMA)
    for index in range(SMALL_FILES):
        many.append(batch(index))
    say(f"== {fresh}: one commit, promise {PROMISE_MINUTES} min; {small}: {SMALL_FILES} one-row commits")

    def table_value(name: str, which: str) -> float | None:
        return signals.table_metric(exporter, name, namespace, which)

    seen, waited = signals.wait_for(
        lambda: (table_value("freshness_promise_seconds", "fresh") == PROMISE_MINUTES * 60
                 and (table_value("small_data_files", "small") or 0) >= SMALL_FILES), refresh * 2 + 10)
    small_before = table_value("small_data_files", "small")
    if not seen:
        fail(stack, "observability", "the exporter does not report the new tables' promise and small files",
             {"waited_s": round(waited, 1), "promise": table_value("freshness_promise_seconds", "fresh"),
              "small_data_files": small_before, "scrape_error": table_value("scrape_error", "small")})
    say(f"== exporter: {fresh} promise {PROMISE_MINUTES * 60}s, age {table_value('snapshot_age_seconds', 'fresh'):.0f}s; "
        f"{small} {small_before:.0f} small data files (after {waited:.0f}s)")

    # -- maintenance: a failed run raises MaintenanceFailed; compaction and a correct expiry recover --------
    status, detail = maintain(stack, admin, "expire_snapshots", small,
                              ["ALTER TABLE {table} EXECUTE expire_snapshots(retention_threshold => '1s')"])
    say(f"== expire_snapshots below the minimum retention: {status} ({detail[:120]})")
    bound_run = obs.get("probe_interval_s", refresh) + 2 * scrape + SLACK_S
    fired, waited_failed = signals.wait_for(lambda: signals.alert_state(
        prometheus, "MaintenanceFailed", namespace=namespace, table="small", action="expire_snapshots") == "firing",
        bound_run)
    if status != "failed" or not fired:
        fail(stack, "observability", "a failed maintenance run did not raise MaintenanceFailed",
             {"run": status, "detail": detail, "waited_s": round(waited_failed, 1), "bound_s": bound_run,
              "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})
    say(f"== MaintenanceFailed firing {waited_failed:.0f}s after the failed run (bound {bound_run:.0f}s)")
    compacted = maintain(stack, admin, "rewrite_data_files", small, ["ALTER TABLE {table} EXECUTE optimize"])
    expired = maintain(stack, admin, "expire_snapshots", small, [
        "SET SESSION {catalog}.expire_snapshots_min_retention = '0s'",
        "ALTER TABLE {table} EXECUTE expire_snapshots(retention_threshold => '7d')"])
    recovered, waited_recovered = signals.wait_for(
        lambda: table_value("small_data_files", "small") == 1 and signals.alert_state(
            prometheus, "MaintenanceFailed", namespace=namespace, table="small", action="expire_snapshots") is None,
        refresh + 2 * scrape + SLACK_S + 10)
    small_after = table_value("small_data_files", "small")
    say(f"== optimize {compacted[0]}, expire_snapshots {expired[0]}: small data files {small_before:.0f} -> "
        f"{small_after}, MaintenanceFailed resolved: {bool(recovered)} ({waited_recovered:.0f}s)")
    if compacted[0] != "ok" or expired[0] != "ok" or not recovered:
        fail(stack, "observability", "after compaction and a successful expiry the signals did not recover",
             {"optimize": compacted, "expire_snapshots": expired, "small_data_files": small_after,
              "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})

    # -- freshness: the one-minute table goes stale, TableStale fires, a commit resolves it -------------------
    stale_at = committed + PROMISE_MINUTES * 60
    bound_stale = stale_for + 2 * scrape + SLACK_S
    timeout = max(0.0, stale_at - time.time()) + bound_stale + 30
    fired, _ = signals.wait_for(lambda: signals.alert_state(prometheus, "TableStale", namespace=namespace,
                                                            table="fresh") == "firing", timeout)
    latency = time.time() - stale_at
    age = table_value("snapshot_age_seconds", "fresh")
    say(f"== TableStale {'firing' if fired else 'NOT firing'} {latency:.0f}s after {fresh} went stale (age {age:.0f}s; bound {bound_stale:.0f}s: "
        f"for {stale_for}s + scrape and evaluation {2 * scrape}s + {SLACK_S:.0f}s slack)")
    if not fired or latency > bound_stale:
        fail(stack, "observability", f"TableStale did not fire within {bound_stale:.0f}s of the table going stale",
             {"fired": fired, "seconds_after_stale": round(latency, 1), "age_s": age,
              "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})
    catalog.load_table(fresh).append(batch(100))
    resolved, waited_resolve = signals.wait_for(lambda: signals.alert_state(
        prometheus, "TableStale", namespace=namespace, table="fresh") is None, refresh + 2 * scrape + SLACK_S + 10)
    say(f"== after a new commit TableStale resolved in {waited_resolve:.0f}s: {bool(resolved)}")
    figure(f"TableStale fired {latency:.0f}s after stale (bound {bound_stale:.0f}s), resolved {waited_resolve:.0f}s "
           f"after a commit; MaintenanceFailed {waited_failed:.0f}s; small files {small_before:.0f} -> {small_after}")
    if not resolved:
        fail(stack, "observability", "TableStale did not resolve after a new commit",
             {"waited_s": round(waited_resolve, 1), "age_s": table_value("snapshot_age_seconds", "fresh")})


@pytest.mark.disruptive("stops the catalog")
def test_catalog_down_is_noticed_and_resolves(stack: Stack, figure, say):
    prometheus, exporter, obs = endpoints(stack)
    ctl = control.control(stack, starts_again=True)
    service = catalog_name = services.default_catalog(stack)
    if not ctl.instance(service).running:
        pytest.skip(f"{ctl.describe(service)} is not running: is the stack up?")
    if signals.alert_state(prometheus, "CatalogDown") is not None:
        fail(stack, "observability", "CatalogDown is already active before the catalog is stopped",
             [a.__dict__ for a in signals.alerts(prometheus)])
    bound = obs["catalog_down_bound_s"] + SLACK_S
    check, seen = _catalog_down_watch(prometheus, exporter)
    stopped_at = time.monotonic()
    ctl.stop(service)
    try:
        fired, _ = signals.wait_for(check, bound + 30, interval_s=0.5)
        noticed = time.monotonic() - stopped_at
        up_metric = signals.metric(exporter, "lakehouse_catalog_up")
    finally:
        started = time.monotonic()
        start_error = ""
        try:
            ctl.start(service)  # through the target: natively `pulumi up`, in the lab `docker start`, to healthy
        except Exception as exc:  # noqa: BLE001 - reported as the finding below
            start_error = f"{type(exc).__name__}: {exc}"
        restart_s = time.monotonic() - started
    stack.reload()
    resolved, waited = signals.wait_for(lambda: signals.alert_state(prometheus, "CatalogDown") is None,
                                        obs["catalog_down_bound_s"] + 30)
    state = f"firing after {noticed:.0f}s" if fired else f"NOT firing after {noticed:.0f}s"
    say(f"== {ctl.describe(service)} stopped: CatalogDown {state} (bound {bound:.0f}s: declared "
        f"{obs['catalog_down_bound_s']}s + {SLACK_S:.0f}s slack; exporter said lakehouse_catalog_up {up_metric}); "
        f"started again in {restart_s:.0f}s, resolved {waited:.0f}s later")
    figure(f"stopped catalog: CatalogDown fired {noticed:.1f}s after the stop (exporter 0 at "
           f"{seen.get('exporter_says_down_s', float('nan')):.1f}s; bound {bound:.0f}s); resolved {waited:.0f}s "
           f"after it was back ({restart_s:.0f}s restart)")
    if start_error:
        fail(stack, "catalog", f"starting {service} again through the target failed", start_error[-3000:])
    if not fired or noticed > bound:
        fail(stack, "observability", f"CatalogDown did not fire within {bound:.0f}s of the catalog stopping",
             {"fired": fired, "seconds": round(noticed, 1), "catalog": catalog_name, "lakehouse_catalog_up": up_metric,
              "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})
    if not resolved:
        fail(stack, "observability", "CatalogDown did not resolve after the catalog came back",
             {"waited_s": round(waited, 1), "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})


def _catalog_down_watch(prometheus: str, exporter: str) -> tuple[Any, dict[str, float]]:
    """A check for ``wait_for``: true once CatalogDown fires; notes when the exporter first said 0 (from start)."""
    started, seen = time.monotonic(), {}

    def check() -> bool:
        if "exporter_says_down_s" not in seen and signals.metric(exporter, "lakehouse_catalog_up") == 0:
            seen["exporter_says_down_s"] = time.monotonic() - started
        state = signals.alert_state(prometheus, "CatalogDown")
        if state == "pending" and "pending_s" not in seen:
            seen["pending_s"] = time.monotonic() - started
        return state == "firing"

    return check, seen


@pytest.mark.disruptive("hangs the catalog (SIGSTOP; docker pause)")
def test_a_hung_catalog_is_noticed_and_resolves(stack: Stack, figure, say):
    """The catalog hangs (natively SIGSTOP of its processes, in the lab ``docker pause``): the port accepts, nothing
    answers, every probe waits out its timeout. SIGCONT (``docker unpause``) comes in a ``finally``, whatever happens."""
    prometheus, exporter, obs = endpoints(stack)
    ctl = control.control(stack)
    service = services.default_catalog(stack)
    if not ctl.instance(service).running:
        pytest.skip(f"{ctl.describe(service)} is not running: is the stack up?")
    if signals.alert_state(prometheus, "CatalogDown") is not None:
        fail(stack, "observability", "CatalogDown is already active before the catalog hangs",
             [a.__dict__ for a in signals.alerts(prometheus)])
    terms = obs.get("catalog_down_terms_s") or {}
    bound = obs["catalog_down_bound_s"] + SLACK_S
    check, seen = _catalog_down_watch(prometheus, exporter)
    hung_at = time.monotonic()
    hung = ctl.pause(service)
    try:
        fired, _ = signals.wait_for(check, bound + 30, interval_s=0.5)
        noticed = time.monotonic() - hung_at
    finally:
        ctl.unpause(service)
    resolved, waited = signals.wait_for(lambda: signals.alert_state(prometheus, "CatalogDown") is None,
                                        obs["catalog_down_bound_s"] + 30)
    how = "SIGSTOP" if ctl.target == "native" else "docker pause"
    say(f"== {service} hung ({how} of {', '.join(hung)}): exporter said lakehouse_catalog_up 0 "
        f"after {seen.get('exporter_says_down_s', float('nan')):.1f}s, CatalogDown pending after "
        f"{seen.get('pending_s', float('nan')):.1f}s, {'firing' if fired else 'NOT firing'} after {noticed:.1f}s "
        f"(bound {bound:.0f}s: {' + '.join(f'{k} {v}' for k, v in terms.items())} + {SLACK_S:.0f}s slack); "
        f"resolved {waited:.0f}s after it went on")
    figure(f"hung catalog: CatalogDown fired {noticed:.1f}s after {how} (exporter 0 at "
           f"{seen.get('exporter_says_down_s', float('nan')):.1f}s; bound {bound:.0f}s); resolved {waited:.0f}s "
           "after it went on")
    if not fired or noticed > bound:
        fail(stack, "observability", f"CatalogDown did not fire within {bound:.0f}s of the catalog hanging",
             {"fired": bool(fired), "seconds": round(noticed, 1), **seen, "terms": terms,
              "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})
    if not resolved:
        fail(stack, "observability", "CatalogDown did not resolve after the catalog was continued",
             {"waited_s": round(waited, 1), "alerts": [a.__dict__ for a in signals.alerts(prometheus)]})

