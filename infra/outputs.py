"""Stack outputs every client and reviewer needs: endpoints, pins, ownership, profiles, credentials."""

from __future__ import annotations

from typing import Any

import pulumi

from infra.services.base import Side, address
from infra.spec import LAYER_NAMES, Layer, PlatformSpec, Target


def endpoints(spec: PlatformSpec) -> dict[str, dict[str, dict[str, str]]]:
    """service -> port -> {internal, external} addresses (external only for published ports)."""
    table: dict[str, dict[str, dict[str, str]]] = {}
    for name, service in spec.enabled_services().items():
        for port_name, port in service.ports.items():
            entry = {"internal": address(spec, name, port_name, Side.INTERNAL)}
            if port.external is not None:
                entry["external"] = address(spec, name, port_name, Side.EXTERNAL)
            table.setdefault(name, {})[port_name] = entry
    return table


def ownership(spec: PlatformSpec) -> list[dict[str, Any]]:
    """The ownership table: one row per layer, in the chapter's order, with its services and pins."""
    rows = []
    for layer_name in LAYER_NAMES:
        layer = Layer(layer_name)
        contract = spec.layers[layer]
        services = spec.services_of(layer)
        rows.append({
            "layer": layer_name,
            "owner": contract.owner,
            "owns": contract.owns,
            "change_control": contract.change_control,
            "promise": contract.promise,
            "down_means": contract.down_means,
            "services": {name: {"version": spec.pin_of(name), "image": svc.image, "owner": spec.owner_of(name)}
                         for name, svc in services.items()},
        })
    return rows


def credentials(secrets: dict[str, pulumi.Output[str]]) -> pulumi.Output:
    """Every credential a client may need, as one secret output (names match the profiles)."""
    names = {k.replace("-", "_"): v for k, v in secrets.items() if not k.startswith("s3-secret-key-")}
    return pulumi.Output.secret(pulumi.Output.all(**names))


def streams(spec: PlatformSpec) -> dict[str, Any] | None:
    """What the streams run and promise: topics, connectors (kind, topics, table, commit interval), CDC freshness.

    None where no Connect runs (neither the platform's worker nor MSK Connect).
    """
    from infra.services import kafka

    enabled = spec.enabled_services()
    if "kafka-connect" not in enabled and not (spec.target is Target.AWS and spec.aws.kafka_msk):
        return None
    streams_spec = spec.streams
    connectors = []
    for connector in streams_spec.connectors:
        entry: dict[str, Any] = {"name": connector.name, "kind": connector.kind}
        if connector.kind == "debezium-postgres":
            entry.update(database=connector.database, tables=list(connector.tables), topics=connector.topics,
                         slot=connector.slot, publication=connector.publication)
        else:
            entry.update(topics=list(connector.topics), table=connector.table, cdc=connector.cdc,
                         commit_interval_s=connector.commit_interval_s, commit_timeout_s=connector.timeout_s)
        connectors.append(entry)
    return {
        "topics": [{"name": t.name, "partitions": t.partitions, "doc": t.doc} for t in kafka.platform_topics(spec)],
        "connectors": connectors,
        "cdc_visible_within_s": streams_spec.cdc_visible_within_s,
    }


def tables(spec: PlatformSpec) -> list[dict[str, Any]]:
    """The declared tables: owner, freshness promise, the maintenance that applies and when it runs."""
    schedules: dict[str, list[str]] = {}
    for job in spec.maintenance:
        schedules.setdefault(job.action, []).append(job.schedule)
    return [{
        "table": table.identifier, "owner": table.owner, "freshness_minutes": table.freshness_minutes,
        "maintenance": {action: schedules.get(action, ["on demand only"]) for action in table.maintenance},
        "columns": [f"{c.name} {c.type}{' not null' if c.required else ''}" for c in table.columns],
        "partition_by": [f"{p.transform}[{p.width}]({p.source})" if p.width else f"{p.transform}({p.source})"
                         for p in table.partition_by],
    } for table in spec.tables]


def recovery(spec: PlatformSpec) -> dict[str, Any]:
    """The recovery promise as figures, and how this target keeps it (checked by the recovery drill)."""
    promise = spec.recovery
    out: dict[str, Any] = {"rpo_minutes": promise.rpo_minutes, "rto_minutes": promise.rto_minutes,
                           "backup_retention_days": promise.backup_retention_days}
    if spec.target is Target.AWS:
        out["backups"] = "AWS Backup: continuous backup (point-in-time restore) of the catalog database"
    elif "catalog-backup" in spec.enabled_services():
        out["backup_schedule"] = promise.backup_schedule
        out["backups"] = "catalog-backup service: SQLite online backup / pg_dump, sha256 sidecars"
    else:
        out["backups"] = "none: services.catalog-backup is disabled"
    return out
