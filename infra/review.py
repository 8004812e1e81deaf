"""Ownership review of a stack, from its config alone: ``python -m infra.review --stack lab``.

Prints, per layer: owner, change control, promise, what "down" means for everyone else, and the
layer's services with their pins. ``--diff OTHER`` shows what differs between two stacks. Exits 2
with the config errors (no traceback) when a stack's config is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from infra.config import ConfigError, load_stack
from infra.outputs import ownership
from infra.paths import PROJECT_ROOT
from infra.spec import PlatformSpec

COLUMNS = ("layer", "owner", "change_control", "promise", "down_means", "services")


def _services_text(services: dict[str, dict[str, str]]) -> str:
    return ", ".join(f"{name} {svc['version']}" for name, svc in services.items()) or "-"


def render_markdown(stack: str, spec: PlatformSpec) -> str:
    header = "| Layer | Owner | Change control | Promise | Down means | Services (pins) |\n|---|---|---|---|---|---|\n"
    body = "".join(
        f"| {r['layer']} | {r['owner']} | {r['change_control']} | {r['promise']} | {r['down_means']} | "
        f"{_services_text(r['services'])} |\n"
        for r in ownership(spec)
    )
    return f"## Ownership: stack `{stack}` (target {spec.target.value})\n\n{header}{body}"


def render_table(console: Console, stack: str, spec: PlatformSpec) -> None:
    table = Table(title=f"Ownership: stack {stack} (target {spec.target.value})", show_lines=True)
    for column in ("Layer", "Owner", "Change control", "Promise", "Down means", "Services (pins)"):
        table.add_column(column, overflow="fold")
    for r in ownership(spec):
        table.add_row(r["layer"], r["owner"], r["change_control"], r["promise"], r["down_means"],
                      _services_text(r["services"]))
    console.print(table)


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
        print(json.dumps({"stack": args.stack, "target": spec.target.value, "layers": ownership(spec)}, indent=2))
    elif args.format == "markdown":
        print(render_markdown(args.stack, spec))
    else:
        render_table(console, args.stack, spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
