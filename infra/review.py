"""Ownership review of a stack, from its config alone: ``python -m infra.review --stack lab``.

Prints, per layer: owner, change control, promise, what "down" means for everyone else, and the
layer's services with their pins; then the declared tables with their owners, freshness promises
and the maintenance that applies (with its schedule), how each catalog's clients authenticate (or why the
catalog is refused on this target), and the recovery promise in figures.
``--diff OTHER`` shows what differs between two stacks. Exits 2 with the config errors (no
traceback) when a stack's config is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from infra.config import ConfigError, load_stack
from infra.outputs import ownership, recovery, tables
from infra.paths import PROJECT_ROOT
from infra.spec import PlatformSpec

COLUMNS = ("layer", "owner", "change_control", "promise", "down_means", "services")


def _services_text(services: dict[str, dict[str, str]]) -> str:
    return ", ".join(f"{name} {svc['version']}" for name, svc in services.items()) or "-"


def _maintenance_text(maintenance: dict[str, list[str]]) -> str:
    return "; ".join(f"{action} {', '.join(crons)}" for action, crons in maintenance.items()) or "none"


def _recovery_text(spec: PlatformSpec) -> str:
    r = recovery(spec)
    schedule = f", every {r['backup_schedule']!r}" if "backup_schedule" in r else ""
    return (f"recovery point objective {r['rpo_minutes']} min, recovery time objective {r['rto_minutes']} min; "
            f"backups kept {r['backup_retention_days']} days{schedule} ({r['backups']})")


def _undeclared_text(spec: PlatformSpec) -> str:
    """What happens to tables nobody declared: observed always, maintained by the jobs of scope ``all``."""
    jobs = [job.action for job in spec.maintenance if job.scope == "all"]
    maintained = f"maintained by {', '.join(jobs)}" if jobs else "not maintained (every job is scope declared)"
    return f"Tables nobody declared are still observed and {maintained}; they have no owner or promise here."


def catalog_access(spec: PlatformSpec) -> list[dict[str, str]]:
    """Per catalog of the registry: how its clients authenticate on this stack, or why it does not run here."""
    from infra.services import registry
    from infra.services.catalogs import gate_of

    rows = []
    for name, definition in registry().catalogs().items():
        role = definition.catalog
        assert role is not None
        why = definition.why_not_on(spec.target)
        if why is not None:
            clients = f"not on {spec.target.value}: {why}"
        elif name not in spec.enabled_services():
            clients = "disabled in this stack"
        elif role.principals is not None:
            clients = (f"each identity is its own principal ({name} client id = identity, its own client secret); "
                       f"the root credential only in {', '.join(role.admin_jobs)}")
        elif (gate := gate_of(spec, name)) is not None:
            clients = f"through {gate}: each identity with its own bearer token"
        else:
            clients = "no authentication: any client on its network acts with every right"
        rows.append({"catalog": name, "clients": clients})
    return rows


def _catalog_access_text(spec: PlatformSpec) -> list[str]:
    return [f"{row['catalog']}: {row['clients']}" for row in catalog_access(spec)]


def render_markdown(stack: str, spec: PlatformSpec) -> str:
    header = "| Layer | Owner | Change control | Promise | Down means | Services (pins) |\n|---|---|---|---|---|---|\n"
    body = "".join(
        f"| {r['layer']} | {r['owner']} | {r['change_control']} | {r['promise']} | {r['down_means']} | "
        f"{_services_text(r['services'])} |\n"
        for r in ownership(spec)
    )
    out = f"## Ownership: stack `{stack}` (target {spec.target.value})\n\n{header}{body}"
    declared = tables(spec)
    if declared:
        out += ("\n### Declared tables\n\n| Table | Owner | Fresh within | Maintenance (cron, UTC) | Partitioned by |\n"
                "|---|---|---|---|---|\n")
        out += "".join(f"| {t['table']} | {t['owner']} | {t['freshness_minutes']} min | "
                       f"{_maintenance_text(t['maintenance'])} | {', '.join(t['partition_by']) or '-'} |\n"
                       for t in declared)
        out += f"\n{_undeclared_text(spec)}\n"
    out += "\n### Catalog access\n\n" + "".join(f"- {line}\n" for line in _catalog_access_text(spec))
    return out + f"\n**Recovery**: {_recovery_text(spec)}\n"


def render_table(console: Console, stack: str, spec: PlatformSpec) -> None:
    table = Table(title=f"Ownership: stack {stack} (target {spec.target.value})", show_lines=True)
    for column in ("Layer", "Owner", "Change control", "Promise", "Down means", "Services (pins)"):
        table.add_column(column, overflow="fold")
    for r in ownership(spec):
        table.add_row(r["layer"], r["owner"], r["change_control"], r["promise"], r["down_means"],
                      _services_text(r["services"]))
    console.print(table)
    declared = tables(spec)
    if declared:
        listing = Table(title=f"Declared tables: stack {stack}", show_lines=True)
        for column in ("Table", "Owner", "Fresh within", "Maintenance (cron, UTC)", "Partitioned by"):
            listing.add_column(column, overflow="fold")
        for t in declared:
            listing.add_row(t["table"], t["owner"], f"{t['freshness_minutes']} min",
                            _maintenance_text(t["maintenance"]), ", ".join(t["partition_by"]) or "-")
        console.print(listing)
        console.print(_undeclared_text(spec))
    console.print("Catalog access:")
    for line in _catalog_access_text(spec):
        console.print(f"  {line}", soft_wrap=True)
    console.print(f"Recovery: {_recovery_text(spec)}")


def diff(left: PlatformSpec, right: PlatformSpec) -> list[dict[str, str]]:
    """Differences between two stacks: contracts per layer, services enabled, pins, owners."""
    changes: list[dict[str, str]] = []
    for a, b in zip(ownership(left), ownership(right), strict=True):
        for key in ("owner", "change_control", "promise", "down_means"):
            if a[key] != b[key]:
                changes.append({"what": f"{a['layer']}.{key}", "left": a[key], "right": b[key]})
    left_services, right_services = left.enabled_services(), right.enabled_services()
    for name in sorted(set(left.services) | set(right.services)):
        l_svc, r_svc = left_services.get(name), right_services.get(name)
        if l_svc is None and r_svc is None:
            continue
        if l_svc is None or r_svc is None:
            changes.append({"what": f"services.{name}", "left": "enabled" if l_svc else "disabled",
                            "right": "enabled" if r_svc else "disabled"})
            continue
        for label, lv, rv in (("version", left.pin_of(name), right.pin_of(name)), ("image", l_svc.image, r_svc.image),
                              ("owner", left.owner_of(name), right.owner_of(name)),
                              ("memory", l_svc.memory, r_svc.memory)):
            if lv != rv:
                changes.append({"what": f"services.{name}.{label}", "left": lv, "right": rv})
    left_tables = {t["table"]: t for t in tables(left)}
    right_tables = {t["table"]: t for t in tables(right)}
    for name in sorted(set(left_tables) | set(right_tables)):
        lt, rt = left_tables.get(name), right_tables.get(name)
        if lt is None or rt is None:
            changes.append({"what": f"tables.{name}", "left": "declared" if lt else "-",
                            "right": "declared" if rt else "-"})
            continue
        for key in ("owner", "freshness_minutes", "maintenance", "columns", "partition_by"):
            if lt[key] != rt[key]:
                changes.append({"what": f"tables.{name}.{key}", "left": str(lt[key]), "right": str(rt[key])})
    right_recovery = recovery(right)
    for key, promised in recovery(left).items():
        if promised != right_recovery.get(key):
            changes.append({"what": f"recovery.{key}", "left": str(promised), "right": str(right_recovery.get(key))})
    if left.target != right.target:
        changes.insert(0, {"what": "target", "left": left.target.value, "right": right.target.value})
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.review", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True, help="stack name: lab, cloud, native (reads Pulumi.<stack>.yaml)")
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table")
    parser.add_argument("--diff", metavar="OTHER", help="show what differs from another stack")
    parser.add_argument("--root", type=Path, default=PROJECT_ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    console = Console(width=200 if args.format == "table" else None)
    try:
        spec = load_stack(args.stack, args.root)
        other = load_stack(args.diff, args.root) if args.diff else None
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if other is not None:
        changes = diff(spec, other)
        if args.format == "json":
            print(json.dumps({"left": args.stack, "right": args.diff, "changes": changes}, indent=2))
        elif args.format == "markdown":
            print(f"## Diff: `{args.stack}` -> `{args.diff}`\n\n| What | {args.stack} | {args.diff} |\n|---|---|---|")
            for c in changes:
                print(f"| {c['what']} | {c['left']} | {c['right']} |")
        else:
            table = Table(title=f"Diff: {args.stack} -> {args.diff}")
            for column in ("What", args.stack, args.diff):
                table.add_column(column, overflow="fold")
            for c in changes:
                table.add_row(c["what"], c["left"], c["right"])
            console.print(table)
        return 0
    if args.format == "json":
        print(json.dumps({"stack": args.stack, "target": spec.target.value, "layers": ownership(spec),
                          "tables": tables(spec), "recovery": recovery(spec)}, indent=2))
    elif args.format == "markdown":
        print(render_markdown(args.stack, spec))
    else:
        render_table(console, args.stack, spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
