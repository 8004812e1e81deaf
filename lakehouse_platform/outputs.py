"""Stack outputs every client and reviewer needs: endpoints, pins, ownership, profiles, credentials."""

from __future__ import annotations

from typing import Any

import pulumi

from lakehouse_platform.model import LAYER_NAMES, Layer, PlatformSpec, Target
from lakehouse_platform.services import profiles as engine_profiles
from lakehouse_platform.services.capabilities import STORE
from lakehouse_platform.services.catalogs import default_catalog
from lakehouse_platform.services.context import Side, address
from lakehouse_platform.services.registry import registry


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


#: Outputs of the platform's own that services add to (a backup service: how it keeps the recovery promise; the
#: metrics store: the alerts it evaluates), merged into them; the platform's own keys stay.
RECOVERY = "recovery"
OBSERVABILITY = "observability"


def observability(spec: PlatformSpec) -> dict[str, Any]:
    """Where the signals are (host side) and what the alerts promise: the observability layer's endpoints; the
    alerts' names are the metrics store's (its ``stack_outputs``)."""
    enabled = spec.enabled_services()
    found: dict[str, Any] = {
        "catalog": default_catalog(spec).name,
        "catalog_down_bound_s": spec.observability.catalog_down_bound_s,
        "catalog_down_terms_s": spec.observability.catalog_down_terms_s,
        "table_stale_for_s": spec.observability.table_stale_for_s,
        "refresh_interval_s": spec.observability.refresh_interval_s,
        "probe_interval_s": spec.observability.probe_interval_s,
        "scrape_interval_s": spec.observability.scrape_interval_s,
    }
    if spec.target is not Target.AWS:
        for definition in registry():
            metrics = definition.metrics
            if metrics is None or definition.name not in enabled:
                continue
            side = Side.EXTERNAL if spec.services[definition.name].ports[metrics.port].external else Side.INTERNAL
            found[metrics.key] = f"http://{address(spec, definition.name, metrics.port, side)}{metrics.path}"
    found.update(registry().contributed_outputs(spec).get(OBSERVABILITY) or {})
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


def admin_secrets() -> set[str]:
    """The catalogs' root/admin credentials: their bootstrap jobs' alone, never a stack output."""
    return {name for d in registry().catalogs().values() if d.catalog is not None for name in d.catalog.admin_secrets}


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
            for item in definition.governance.identity_secrets:
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

    Top level: the platform's own (its admin S3 key, database passwords, ...), never a catalog's root/admin
    credential (its bootstrap jobs' alone); ``identities``: one entry per identity, which is what engines use
    (the host profiles name the identity).
    """
    names: dict[str, Any] = {k.replace("-", "_"): v for k, v in secrets.items()
                             if not k.startswith(_per_identity_kinds()) and not k.endswith(("-pem", "-cert"))
                             and k not in admin_secrets()}
    if spec is not None:
        names["identities"] = identity_credentials(spec, secrets)
    return pulumi.Output.secret(pulumi.Output.from_input(names))


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


def grants(spec: PlatformSpec) -> dict[str, dict[str, list[str]]]:
    """identity -> namespace -> what it may do there (``PlatformSpec.access_of``: each known namespace and ``*``).

    The same answer every enforcer was rendered from; CD and the governance probe read it (no secret in it).
    """
    return {name: {ns: list(actions) for ns, actions in spec.access_of(name).items()} for name in spec.identities}


def contributed(spec: PlatformSpec) -> dict[str, Any]:
    """The stack outputs services add of their own (``ServiceDefinition.stack_outputs``), e.g. ``streams``."""
    return {k: v for k, v in registry().contributed_outputs(spec).items() if k not in (RECOVERY, OBSERVABILITY)}


def recovery(spec: PlatformSpec) -> dict[str, Any]:
    """The recovery promise as figures, and how this target keeps it (checked by the recovery drill)."""
    promise = spec.recovery
    out: dict[str, Any] = {"rpo_minutes": promise.rpo_minutes, "rto_minutes": promise.rto_minutes,
                           "backup_retention_days": promise.backup_retention_days}
    if spec.target is Target.AWS:
        out["backups"] = "AWS Backup: continuous backup (point-in-time restore) of the catalog database"
    else:
        out["backups"] = "none: no backup service is enabled"
    out.update(registry().contributed_outputs(spec).get(RECOVERY) or {})
    return out


def profiles(spec: PlatformSpec) -> dict[str, Any]:
    """Every profile, host side and service side, as one stack output."""
    enabled = spec.enabled_services()
    host: dict[str, Any] = {"identity": spec.governance.writer, "reader_identity": spec.governance.reader,
                            "pyiceberg": engine_profiles.pyiceberg(spec),
                            "spark": engine_profiles.spark(spec),  # not the service: the host's Spark client
                            "spark_packages": engine_profiles.spark_packages(spec),
                            "duckdb": engine_profiles.duckdb(spec)}
    services: dict[str, Any] = {}
    for definition in registry():  # each service's clients (ServiceDefinition.profile)
        profile = definition.profile
        if profile is None or definition.name not in enabled:
            continue
        if profile.client is not None:
            host[profile.key] = profile.client(spec, Side.EXTERNAL)
        if profile.services is not None:
            services.update(profile.services(spec))
    result: dict[str, Any] = {"host": host, "services": services}
    if spec.target is Target.NATIVE:
        result["note"] = "127.0.0.1 on both sides (local processes)"
    return result
