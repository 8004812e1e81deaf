"""Stack outputs every client and reviewer needs: endpoints, pins, ownership, profiles, credentials."""

from __future__ import annotations

from typing import Any

import pulumi

from infra.services import profiles as engine_profiles
from infra.services import registry
from infra.services.capabilities import STORE
from infra.services.context import ServiceContext, Side, address, url
from infra.services.flink import config as flink_config
from infra.services.trino import config as trino_config
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


def observability(spec: PlatformSpec) -> dict[str, Any]:
    """Where the signals are (host side) and what the alerts promise: the observability layer's endpoints."""
    from infra.operations.alerts import alerts

    enabled = spec.enabled_services()
    found: dict[str, Any] = {
        "catalog": spec.catalog.default,
        "alerts": [alert.name for alert in alerts(spec)],
        "catalog_down_bound_s": spec.observability.catalog_down_bound_s,
        "catalog_down_terms_s": spec.observability.catalog_down_terms_s,
        "table_stale_for_s": spec.observability.table_stale_for_s,
        "refresh_interval_s": spec.observability.refresh_interval_s,
        "probe_interval_s": spec.observability.probe_interval_s,
        "scrape_interval_s": spec.observability.scrape_interval_s,
    }
    for name, key, path in (("prometheus", "prometheus", ""), ("lakehouse-exporter", "exporter", "/metrics"),
                            ("catalog-gate", "catalog_gate_metrics", "/metrics")):
        if name in enabled and spec.target is not Target.AWS:
            side = Side.EXTERNAL if spec.services[name].ports["http"].external else Side.INTERNAL
            found[key] = f"http://{address(spec, name, 'http', side)}{path}"
    return found


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


def _per_identity_kinds() -> tuple[str, ...]:
    """The secret name prefixes kept per identity (under ``credentials.identities``), not at the top level."""
    return ("s3-secret-key-", "catalog-token-", *(f"{kind}-" for kind in registry().identity_secrets()))


def identity_credentials(spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]]) -> dict[str, Any]:
    """identity -> what a client acting as it needs: store keys, catalog token, and its credentials at each
    service that declares per-identity secrets (Trino's user and password).

    The keys are the names the profiles' placeholders use (``{s3_access_key}``, ``{catalog_token}``, ...).
    """
    found: dict[str, Any] = {}
    store = registry().provider(spec, STORE)
    enabled = spec.enabled_services()
    for name, identity in spec.identities.items():
        entry: dict[str, Any] = {"role": spec.role_of_identity(name)}
        for definition in registry():
            for item in definition.identity_secrets:
                if definition.name in enabled and item.values is not None:
                    entry.update(item.values(name))
        if store is not None:
            entry["s3_access_key"] = identity.access_key
        wanted = [("s3_secret_key", f"s3-secret-key-{name}"), ("catalog_token", f"catalog-token-{name}")]
        wanted += [(item.credentials_key, item.secret_name(name))
                   for _, item in registry().identity_secrets().values()]
        for key, secret_name in wanted:
            if secret_name in secrets and (key != "s3_secret_key" or store is not None):
                entry[key] = secrets[secret_name]
        found[name] = entry
    return found


def credentials(secrets: dict[str, pulumi.Output[str]], spec: PlatformSpec | None = None) -> pulumi.Output:
    """Every credential a client may need, as one secret output (names match the profiles).

    Top level: the platform's own (its admin S3 key, database passwords, ...); ``identities``: one entry
    per identity, which is what engines use (the host profiles name the identity).
    """
    names: dict[str, Any] = {k.replace("-", "_"): v for k, v in secrets.items()
                             if not k.startswith(_per_identity_kinds()) and not k.endswith(("-pem", "-cert"))}
    if spec is not None:
        names["identities"] = identity_credentials(spec, secrets)
    return pulumi.Output.secret(pulumi.Output.from_input(names))


def streams(spec: PlatformSpec) -> dict[str, Any] | None:
    """What the streams run and promise: topics, connectors (kind, topics, table, commit interval), CDC freshness.

    None where no Connect runs (neither the platform's worker nor MSK Connect).
    """
    from infra.services.kafka import config as kafka_config

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
        "topics": [{"name": t.name, "partitions": t.partitions, "doc": t.doc}
                   for t in kafka_config.platform_topics(spec)],
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


def profiles(spec: PlatformSpec) -> dict[str, Any]:
    """Every profile, host side and service side, as one stack output."""
    enabled = spec.enabled_services()
    host: dict[str, Any] = {"identity": spec.governance.writer, "reader_identity": spec.governance.reader,
                            "pyiceberg": engine_profiles.pyiceberg(spec), "spark": engine_profiles.spark(spec),
                            "spark_packages": engine_profiles.spark_packages(spec),
                            "duckdb": engine_profiles.duckdb(spec)}
    services: dict[str, Any] = {}
    if "trino" in enabled:
        host["trino"] = trino_config.client_profile(spec)
        services["trino_catalogs"] = trino_config.catalog_files(ServiceContext(spec, "trino"), Side.INTERNAL)
    if "flink-jobmanager" in enabled:
        host["flink"] = flink_config.profile(spec, Side.EXTERNAL)
        services["flink"] = flink_config.profile(spec, Side.INTERNAL)
        services["flink_sql"] = engine_profiles.flink_sql(spec)
    if "kafka" in enabled:
        # Two listeners: PLAINTEXT for the platform's services, HOST for clients on the host.
        host["kafka"] = {"bootstrap.servers": address(spec, "kafka", "host", Side.EXTERNAL)}
        services["kafka"] = {"bootstrap.servers": address(spec, "kafka", "broker", Side.INTERNAL)}
    if "kafka-connect" in enabled:
        host["kafka_connect"] = {"url": url(spec, "kafka-connect", "rest", Side.EXTERNAL)}
        services["kafka_connect"] = {"url": url(spec, "kafka-connect", "rest", Side.INTERNAL)}
    result: dict[str, Any] = {"host": host, "services": services}
    if spec.target is Target.NATIVE:
        result["note"] = "127.0.0.1 on both sides (local processes)"
    return result
