"""Probe — the signals and alerts as they are, read only (observability; safe on any stack).

What the observability layer promises, checked without making anything fire: Prometheus has loaded every alert
rule the stack declares (the ``observability.alerts`` output) and none is broken; every target it scrapes is up
(the exporter among them: without it no table or service signal is current); the exporter sees the catalog
answering; every declared table resolves and carries its freshness promise; and TableStale agrees with each
declared table's age: firing for one past its promise by more than the alert's bound, silent for one well within
it. The alerts active now are reported. What grows is measured beside its bounds: each table's history with its
retention's bounds and owner, natively each service's state on disk and the WAL each replication slot holds. The
disruptive ``test_signals.py`` makes the alerts fire and resolve.
"""

from __future__ import annotations

from typing import Any

import pytest

from lakehouse_platform.probes.support import services, signals
from lakehouse_platform.probes.support.stack import Stack, fail
from lakehouse_platform.services.capabilities import METRICS, SIGNALS

pytestmark = [pytest.mark.observability, pytest.mark.safe]

#: Scheduling slack on a loaded host, on top of each bound the stack declares.
SLACK_S = 5.0


def query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    """An instant query's samples: each ``{"metric": {...}, "value": [t, "v"]}``."""
    body = signals.session().get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10).json()
    return body["data"]["result"]


def by_table(prometheus: str, expr: str) -> dict[str, float]:
    """``namespace.table -> value`` of a per-table expression."""
    return {f"{s['metric'].get('namespace')}.{s['metric'].get('table')}": float(s["value"][1])
            for s in query(prometheus, expr)}


def test_signals_and_alerts_are_current_and_agree_with_the_tables(stack: Stack, figure, say):
    obs = signals.observability(stack.outputs)
    prometheus = services.metrics_url(stack, METRICS)  # the service that evaluates the alert rules, by capability
    if not prometheus:
        pytest.skip("this stack exports no metrics endpoint to read alerts from (observability output; aws: "
                    "CloudWatch alarms)")
    session = signals.session()
    groups = session.get(f"{prometheus}/api/v1/rules", timeout=10).json()["data"]["groups"]
    rules = {rule["name"]: rule for group in groups for rule in group["rules"] if rule.get("type") == "alerting"}
    declared = list(obs.get("alerts") or [])
    missing = [name for name in declared if name not in rules]
    broken = {name: rule.get("lastError") for name, rule in rules.items() if rule.get("health") == "err"}
    targets = session.get(f"{prometheus}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]
    down = {t["labels"].get("job", "?"): t.get("lastError") or t.get("health") for t in targets
            if t.get("health") != "up"}
    catalog_up = [float(s["value"][1]) for s in query(prometheus, "lakehouse_catalog_up")]
    active = signals.alerts(prometheus)
    say(f"== {len(rules)} alert rules loaded ({len(declared)} declared), {len(targets)} scrape targets, "
        f"{len(targets) - len(down)} up; lakehouse_catalog_up {catalog_up}; active alerts: "
        f"{sorted({(a.name, a.state) for a in active}) or 'none'}")

    tables = [t["table"] for t in stack.outputs.get("tables") or []]
    exists = by_table(prometheus, "iceberg_table_exists")
    promise = by_table(prometheus, "iceberg_table_freshness_promise_seconds")
    age = by_table(prometheus, "iceberg_table_snapshot_age_seconds")
    bound = obs["table_stale_for_s"] + 2 * obs["scrape_interval_s"] + obs["refresh_interval_s"] + SLACK_S
    wrong = []
    for entry in stack.outputs.get("tables") or []:
        ident, promised = entry["table"], entry["freshness_minutes"] * 60
        if exists.get(ident) != 1 or promise.get(ident) != promised:
            wrong.append({"table": ident, "exists": exists.get(ident), "promise_s": promise.get(ident),
                          "declared_promise_s": promised})
            continue
        stale = signals.alert_state(prometheus, "TableStale", namespace=ident.split(".", 1)[0],
                                    table=ident.split(".", 1)[1])
        seconds = age.get(ident)
        say(f"== {ident}: last data commit {seconds if seconds is None else round(seconds)} s ago, promise "
            f"{promised} s, TableStale {stale or 'silent'}")
        if seconds is not None and seconds > promised + bound and stale != "firing":
            wrong.append({"table": ident, "age_s": seconds, "promise_s": promised, "TableStale": stale,
                          "problem": f"past its promise by more than {bound:.0f} s and TableStale is not firing"})
        if seconds is not None and seconds < promised - bound and stale is not None:
            wrong.append({"table": ident, "age_s": seconds, "promise_s": promised, "TableStale": stale,
                          "problem": "well within its promise and TableStale is active"})
    figure(f"{len(rules)} rules, {len(targets) - len(down)}/{len(targets)} targets up, {len(tables)} declared "
           f"tables, {len(active)} active alerts")
    if missing or broken:
        fail(stack, "observability", "Prometheus has not loaded the stack's alert rules",
             {"missing": missing, "broken": broken})
    if down:
        fail(stack, "observability", "a target Prometheus scrapes is down: its signals are not current", down)
    if not catalog_up or any(value != 1 for value in catalog_up):
        fail(stack, "observability", "the exporter does not report the catalog answering (lakehouse_catalog_up)",
             {"lakehouse_catalog_up": catalog_up, "alerts": [a.__dict__ for a in active]})
    if wrong:
        fail(stack, "observability", "the signals of the declared tables disagree with their declaration", wrong)


def test_growth_is_measured_against_its_bounds(stack: Stack, say):
    """Every watched table's history (snapshots, metadata.json, load time) beside the bounds its retention declares
    and its owner; natively every service's state on disk beside its budget, and the WAL each replication slot
    holds (the database read by the exporter itself)."""
    exporter = services.metrics_url(stack, SIGNALS)
    if not exporter:
        pytest.skip("this stack exports no exporter endpoint (observability output)")
    samples = signals.samples(exporter)

    def values(name: str) -> dict[tuple[tuple[str, str], ...], float]:
        return {labels: value for (metric, labels), value in samples.items() if metric == name}

    tables = {(d["namespace"], d["table"]) for d in map(dict, values("iceberg_table_exists"))
              if values("iceberg_table_exists")[tuple(sorted(d.items()))] == 1}
    bounded = {(d["namespace"], d["table"]): d.get("owner", "")
               for d in map(dict, values("iceberg_table_max_snapshots"))}
    sized = {(d["namespace"], d["table"]) for d in map(dict, values("iceberg_table_metadata_bytes"))}
    missing = sorted(t for t in tables if t not in bounded or t not in sized)
    if missing:
        fail(stack, "observability", "tables the exporter watches without their metadata size or their bounds",
             {"tables": [".".join(t) for t in missing]})
    declared = {tuple(t["table"].split(".", 1)): t["owner"] for t in stack.outputs.get("tables") or []}
    misowned = {".".join(t): bounded.get(t) for t, owner in declared.items() if t in tables and bounded.get(t) != owner}
    if misowned:
        fail(stack, "observability", "declared tables whose bounds do not name their owner", misowned)
    say(f"{len(tables)} tables with their bounds; metadata.json largest "
        f"{max(values('iceberg_table_metadata_bytes').values(), default=0) / 1024:.0f} KiB")
    native = (stack.outputs.get("native") or {}).get("services") or {}
    if not native:
        return
    state = {dict(labels)["service"]: value for labels, value in values("lakehouse_service_state_bytes").items()}
    watched = {dict(labels)["service"] for labels in values("lakehouse_service_up")}  # every service but itself
    unmeasured = sorted(name for name in native if name in watched and state.get(name, 0) <= 0)
    if unmeasured:
        fail(stack, "observability", "services whose state on disk the exporter does not measure",
             {"services": unmeasured, "measured": state})
    slots = {dict(labels)["slot"] for labels in values("lakehouse_replication_slot_retained_bytes")}
    wanted = {c["slot"] for c in (stack.outputs.get("streams") or {}).get("connectors") or []
              if c.get("kind") == "debezium-postgres" and c.get("slot")}
    if wanted - slots:
        fail(stack, "observability", "replication slots the exporter does not read",
             {"declared": sorted(wanted), "read": sorted(slots)})
    say(f"state on disk of {len(state)} services, {sum(state.values()) / 1e6:.0f} MB; slots read: "
        f"{', '.join(sorted(slots)) or 'none declared'}")
