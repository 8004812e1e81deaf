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


def observability(spec: PlatformSpec) -> dict[str, Any]:
    """Where the signals are (host side) and what the alerts promise: the observability layer's endpoints."""
    from infra.operations.alerts import alerts

    enabled = spec.enabled_services()
    found: dict[str, Any] = {
        "catalog": spec.catalog.default,
        "alerts": [alert.name for alert in alerts(spec)],
        "catalog_down_bound_s": spec.observability.catalog_down_bound_s,
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


#: Secrets kept per identity (under ``credentials.identities``) or elsewhere, not at the top level.
_PER_IDENTITY = ("s3-secret-key-", "catalog-token-", "trino-password-")


def identity_credentials(spec: PlatformSpec, secrets: dict[str, pulumi.Output[str]]) -> dict[str, Any]:
    """identity -> what a client acting as it needs: store keys, catalog token, Trino user and password.

    The keys are the names the profiles' placeholders use (``{s3_access_key}``, ``{catalog_token}``, ...).
    """
    found: dict[str, Any] = {}
    for name, identity in spec.identities.items():
        entry: dict[str, Any] = {"role": spec.role_of_identity(name), "trino_user": name}
        if "seaweedfs" in spec.enabled_services():
            entry["s3_access_key"] = identity.access_key
        for key, secret_name in (("s3_secret_key", f"s3-secret-key-{name}"), ("catalog_token", f"catalog-token-{name}"),
                                 ("trino_password", f"trino-password-{name}")):
            if secret_name in secrets and (key != "s3_secret_key" or "seaweedfs" in spec.enabled_services()):
                entry[key] = secrets[secret_name]
        found[name] = entry
    return found


def credentials(secrets: dict[str, pulumi.Output[str]], spec: PlatformSpec | None = None) -> pulumi.Output:
    """Every credential a client may need, as one secret output (names match the profiles).

    Top level: the platform's own (its admin S3 key, database passwords, ...); ``identities``: one entry
    per identity, which is what engines use (the host profiles name the identity).
    """
    names: dict[str, Any] = {k.replace("-", "_"): v for k, v in secrets.items()
                             if not k.startswith(_PER_IDENTITY) and not k.endswith(("-pem", "-cert"))}
    if spec is not None:
        names["identities"] = identity_credentials(spec, secrets)
    return pulumi.Output.secret(pulumi.Output.from_input(names))
