"""Ownership review of a stack, from its config alone: ``lakehouse review --stack lab``.

Prints, per layer: owner, change control, approvers, promise, what "down" means for everyone else, and the
layer's services with their pins; then the declared tables with their owners, freshness promises
and the maintenance that applies (with its schedule), how each catalog's clients authenticate (or why the
catalog is refused on this target), who may read, write and manage each namespace
(``lakehouse_platform.review.grants``), and the
recovery promise in figures. ``--diff OTHER`` shows what differs between two stacks, each changed grant included.
Exits 2 with the config errors (no traceback) when a stack's config is invalid. The table fits the terminal
(``COLUMNS``): narrower than ``TABLE_WIDTH`` each layer is a block of lines instead of a row.

Change mode, for pull requests (``lakehouse_platform.review.change``): ``--base <file or rev:path> --head <file>``
and/or
``--preview <pulumi preview --json>``, with ``--approved-by team,...``: each changed key and resource with its
layer, owner, change control, what it does and what is down meanwhile, and who must approve; exits 3
(``EXIT_APPROVALS_MISSING``) while an approval is missing. ``--codeowners`` prints the ownership table as a
CODEOWNERS section for the stack files; ``--handles`` the teams' handles as JSON (for CD).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lakehouse_platform.config import ConfigError, load_stack
from lakehouse_platform.model import OWNER_APPROVER, Layer, PlatformSpec
from lakehouse_platform.outputs import ownership, recovery, tables
from lakehouse_platform.paths import project_root
from lakehouse_platform.review import grants
from lakehouse_platform.review.arguments import add_arguments
from lakehouse_platform.review.change import EXIT_BAD_INPUT
from lakehouse_platform.review.change.terminal import print_wrapped
from lakehouse_platform.version import PLATFORM_VERSION

COLUMNS = ("layer", "owner", "change_control", "promise", "down_means", "services")
#: Narrower than this, the six-column ownership table folds every word: each layer is printed as a block instead.
TABLE_WIDTH = 140


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
    from lakehouse_platform.services.catalogs import gate_of
    from lakehouse_platform.services.registry import registry

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
    out = f"## Ownership: stack `{stack}` (target {spec.target.value}, platform {PLATFORM_VERSION})\n\n{header}{body}"
    declared = tables(spec)
    if declared:
        out += ("\n### Declared tables\n\n| Table | Owner | Fresh within | Maintenance (cron, UTC) | Partitioned by |\n"
                "|---|---|---|---|---|\n")
        out += "".join(f"| {t['table']} | {t['owner']} | {t['freshness_minutes']} min | "
                       f"{_maintenance_text(t['maintenance'])} | {', '.join(t['partition_by']) or '-'} |\n"
                       for t in declared)
        out += f"\n{_undeclared_text(spec)}\n"
    out += "\n### Catalog access\n\n" + "".join(f"- {line}\n" for line in _catalog_access_text(spec))
    out += ("\n### Grants (who may, per namespace)\n\n| Namespace | read | write | manage |\n|---|---|---|---|\n"
            + "".join(f"| {r['namespace']} | {_names(r['read'])} | {_names(r['write'])} | {_names(r['manage'])} |\n"
                      for r in grants.grants_table(spec)))
    out += "".join(f"\n- {flag}" for flag in grants.flags(spec)) + ("\n" if grants.flags(spec) else "")
    return out + f"\n**Recovery**: {_recovery_text(spec)}\n"


def _approvers_text(spec: PlatformSpec, layer: str) -> str:
    """A layer's approvers, ``owner`` said as whom it means (the layer's owner, or the changed service's own)."""
    contract = spec.layers[Layer(layer)]
    return ", ".join(f"the owner of what changes ({contract.owner} or a service's own)" if name == OWNER_APPROVER
                     else name for name in contract.approvers)


def _names(identities: list[str]) -> str:
    return ", ".join(identities) or "-"


def render_grants(console: Console, stack: str, spec: PlatformSpec) -> None:
    """Who may read, write and manage each namespace; what to read twice; where it is enforced."""
    if console.width >= TABLE_WIDTH:
        table = Table(title=f"Grants: stack {stack} (who may, per namespace)", show_lines=True)
        for column in ("Namespace", "read", "write", "manage"):
            table.add_column(column, overflow="fold")
        for r in grants.grants_table(spec):
            table.add_row(r["namespace"], _names(r["read"]), _names(r["write"]), _names(r["manage"]))
        console.print(table)
    else:
        print_wrapped(console, f"Grants: stack {stack} (who may, per namespace)", indent=0)
        for r in grants.grants_table(spec):
            print_wrapped(console, f"{r['namespace']}: read {_names(r['read'])}; write {_names(r['write'])}; "
                                   f"manage {_names(r['manage'])}")
    for flag in grants.flags(spec):
        print_wrapped(console, f"! {flag}", indent=0)
    print_wrapped(console, "Enforced by: " + ("; ".join(grants.enforced_by(spec)) or "nothing on this stack"),
                  indent=0)


def render_table(console: Console, stack: str, spec: PlatformSpec) -> None:
    heading = f"Ownership: stack {stack} (target {spec.target.value}, platform {PLATFORM_VERSION})"
    if console.width >= TABLE_WIDTH:
        table = Table(title=heading, show_lines=True)
        for column in ("Layer", "Owner", "Change control", "Promise", "Down means", "Services (pins)"):
            table.add_column(column, overflow="fold")
        for r in ownership(spec):
            control = f"{r['change_control']} (approve: {_approvers_text(spec, r['layer'])})"
            table.add_row(r["layer"], r["owner"], control, r["promise"], r["down_means"], _services_text(r["services"]))
        console.print(table)
    else:
        print_wrapped(console, heading, indent=0)
        for r in ownership(spec):
            print_wrapped(console, f"{r['layer']}  owner {r['owner']}", indent=0)
            for label, value in (("change control", r["change_control"]),
                                 ("approvers", _approvers_text(spec, r["layer"])), ("promise", r["promise"]),
                                 ("down means", r["down_means"]), ("services", _services_text(r["services"]))):
                print_wrapped(console, f"{label}: {value}")
    declared = tables(spec)
    if declared:
        if console.width >= TABLE_WIDTH:
            listing = Table(title=f"Declared tables: stack {stack}", show_lines=True)
            for column in ("Table", "Owner", "Fresh within", "Maintenance (cron, UTC)", "Partitioned by"):
                listing.add_column(column, overflow="fold")
            for t in declared:
                listing.add_row(t["table"], t["owner"], f"{t['freshness_minutes']} min",
                                _maintenance_text(t["maintenance"]), ", ".join(t["partition_by"]) or "-")
            console.print(listing)
        else:
            print_wrapped(console, f"Declared tables: stack {stack}", indent=0)
            for t in declared:
                print_wrapped(console, f"{t['table']}  owner {t['owner']}, fresh within {t['freshness_minutes']} min",
                              indent=0)
                print_wrapped(console, f"maintenance (cron, UTC): {_maintenance_text(t['maintenance'])}; "
                                       f"partitioned by {', '.join(t['partition_by']) or '-'}")
        print_wrapped(console, _undeclared_text(spec), indent=0)
    print_wrapped(console, "Catalog access:", indent=0)
    for line in _catalog_access_text(spec):
        print_wrapped(console, line)
    render_grants(console, stack, spec)
    print_wrapped(console, f"Recovery: {_recovery_text(spec)}", indent=0)


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
    changes += grants.grant_changes(left, right)
    right_recovery = recovery(right)
    for key, promised in recovery(left).items():
        if promised != right_recovery.get(key):
            changes.append({"what": f"recovery.{key}", "left": str(promised), "right": str(right_recovery.get(key))})
    if left.target != right.target:
        changes.insert(0, {"what": "target", "left": left.target.value, "right": right.target.value})
    return changes


def _change_mode(args: argparse.Namespace, console: Console, root: Path) -> int:
    """``--base``/``--head``/``--preview``: the change review (``review.change``); its exit code gates CD."""
    from lakehouse_platform.review.change import approvals, keys, render
    from lakehouse_platform.review.change.preview import PreviewError, read_preview, resource_changes
    from lakehouse_platform.review.change.sources import SourceError, read_source

    head_ref = args.head or (f"Pulumi.{args.stack}.yaml" if args.stack else None)
    if head_ref is None:
        print("error: the change mode needs --head FILE (or --stack NAME for Pulumi.NAME.yaml)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        head_source = read_source(head_ref, root)
        base_source = read_source(args.base, root) if args.base else None
        head = head_source.spec()
        if head is None:
            raise SourceError(f"{head_ref}: the head must exist")
        base = base_source.spec() if base_source is not None else None
        steps = []
        if args.preview:
            text = sys.stdin.read() if args.preview == "-" else Path(args.preview).read_text(encoding="utf-8")
            steps = read_preview(text, args.preview)
    except (ConfigError, SourceError, PreviewError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    config = keys.config_changes(base, head) if base_source is not None else []
    result = approvals.review(head_source.stack, base_source.label if base_source else None,
                              head_source.label, base, head, config,
                              resource_changes(steps, head, head_source.stack),
                              [name for given in args.approved_by or [] for name in given.split(",")])
    if args.format == "json":
        print(render.render_json(result))
    elif args.format == "markdown":
        print(render.render_markdown(result))
    else:
        render.render_terminal(console, result)
    return result.exit_code


def main(argv: list[str] | None = None) -> int:
    """The review on its own (``lakehouse review`` is this): ``add_arguments``, then ``run``."""
    parser = argparse.ArgumentParser(prog="lakehouse review", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """The review as ``args`` ask (``add_arguments``); its exit code (2: bad input, said without a traceback)."""
    console = Console()
    root = args.root or project_root()
    if args.codeowners:
        from lakehouse_platform.review.change.codeowners import section

        try:
            print(section(root, [f"Pulumi.{args.stack}.yaml"] if args.stack else None), end="")
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        return 0
    if args.base or args.preview:
        return _change_mode(args, console, root)
    if not args.stack:
        print("error: review: --stack is required (or --base/--preview for the change mode, --codeowners)",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        spec = load_stack(args.stack, root)
        other = load_stack(args.diff, root) if args.diff else None
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.handles:
        print(json.dumps(spec.review.handles, indent=2))
        return 0
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
    if args.format == "svg":
        from lakehouse_platform.review import pictures

        print(pictures.document(spec, args.stack))
    elif args.format == "json":
        print(json.dumps({"stack": args.stack, "target": spec.target.value, "platform_version": PLATFORM_VERSION,
                          "layers": ownership(spec), "tables": tables(spec), "grants": grants.grants_table(spec),
                          "flags": grants.flags(spec), "recovery": recovery(spec)}, indent=2))
    elif args.format == "markdown":
        print(render_markdown(args.stack, spec))
    else:
        render_table(console, args.stack, spec)
    return 0

