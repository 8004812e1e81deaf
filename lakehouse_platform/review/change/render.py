"""The change review for a terminal (a table where it fits, stacked blocks where it does not), for a pull request
(markdown) and for machines (JSON)."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from lakehouse_platform.review.change import EXIT_APPROVALS_MISSING, rights
from lakehouse_platform.review.change.approvals import Review, ReviewedChange
from lakehouse_platform.review.change.terminal import print_wrapped
from lakehouse_platform.version import PLATFORM_VERSION

#: Narrower than this, a table of seven columns folds every word: each change is printed as a block instead.
TABLE_WIDTH = 150


def _approvers(change: ReviewedChange) -> str:
    return ", ".join(f"{a} (missing)" if a in change.missing else a for a in change.approvers)


def title(review: Review) -> str:
    sides = f"{review.base} -> {review.head}" if review.base else f"preview of {review.head}"
    return f"Change review: stack {review.stack} ({sides}), platform {PLATFORM_VERSION}"


def verdict(review: Review) -> str:
    """One line: what is approved, what is missing, and the exit code CD gates on."""
    if not review.changes:
        return "No change to review."
    given = ", ".join(review.approved_by) or "nobody"
    if review.missing:
        return (f"NOT APPROVED: missing {', '.join(review.missing)} (approved by {given}); exit "
                f"{EXIT_APPROVALS_MISSING}")
    return f"APPROVED: every change has its approvers ({given})"


def _who(entry: dict[str, list[str]]) -> str:
    """``read: etl, audit; write: etl`` (nobody: ``-``)."""
    return "; ".join(f"{action}: {', '.join(names)}" for action, names in entry.items()) or "-"


def rights_rows(review: Review) -> list[tuple[str, str, str, str, str]]:
    """Per identity and namespace: (identity, namespace, before, after, widening/narrowing)."""
    return [(c.identity, c.namespace, rights.actions_text(c.before), rights.actions_text(c.after), c.direction)
            for c in review.rights]


def namespace_rows(review: Review) -> list[tuple[str, str, str]]:
    """Per namespace: (namespace, who gains what, who loses what)."""
    found = rights.by_namespace(review.rights)
    return [(ns, _who(entry["gains"]), _who(entry["loses"])) for ns, entry in found.items()]


def _render_rights_terminal(console: Console, review: Review) -> None:
    if not review.rights:
        return
    kind = rights.direction(review.rights)
    per_identity = Table(title=f"Rights per identity and namespace ({kind})", show_lines=False)
    for column in ("Identity", "Namespace", "Before", "After", "Change"):
        per_identity.add_column(column, overflow="fold")
    for identity_row in rights_rows(review):
        per_identity.add_row(*identity_row)
    console.print(per_identity)
    per_namespace = Table(title="Who gains and who loses, per namespace")
    for column in ("Namespace", "Gains", "Loses"):
        per_namespace.add_column(column, overflow="fold")
    for row in namespace_rows(review):
        per_namespace.add_row(*row)
    console.print(per_namespace)


def render_terminal(console: Console, review: Review) -> None:
    print_wrapped(console, title(review), indent=0)
    if console.width >= TABLE_WIDTH:
        table = Table(show_lines=True)
        for column in ("What", "Change", "Layer", "Owner", "Approvers", "Does", "Down while it happens"):
            table.add_column(column, overflow="fold")
        for c in review.changes:
            table.add_row(c.what, c.change, ", ".join(c.layers), ", ".join(c.owners), _approvers(c), c.effect.does,
                          c.effect.down)
        console.print(table)
    else:
        for c in review.changes:
            print_wrapped(console, f"* {c.what}  {c.change}", indent=0)
            lines = [f"layer {', '.join(c.layers)}; owner {', '.join(c.owners)}",
                     "change control: " + "; ".join(dict.fromkeys(c.change_control)),
                     f"does: {c.effect.does}", f"down while it happens: {c.effect.down}",
                     f"approvers: {_approvers(c)}"]
            for line in lines:
                print_wrapped(console, line)
    _render_rights_terminal(console, review)
    print_wrapped(console, verdict(review), indent=0)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(review: Review) -> str:
    out = [f"## {title(review)}", ""]
    if review.changes:
        out += ["| What | Change | Layer | Owner | Change control | Does | Down while it happens | Approvers |",
                "|---|---|---|---|---|---|---|---|"]
        for c in review.changes:
            approvers = ", ".join(f"**{a}** (missing)" if a in c.missing else a for a in c.approvers)
            out.append("| " + " | ".join(_cell(x) for x in (
                f"`{c.what}`", c.change, ", ".join(c.layers), ", ".join(c.owners),
                "; ".join(dict.fromkeys(c.change_control)), c.effect.does, c.effect.down, approvers)) + " |")
        if review.rights:
            out += ["", f"### Rights per identity and namespace ({rights.direction(review.rights)})", "",
                    "| Identity | Namespace | Before | After | Change |", "|---|---|---|---|---|"]
            out += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rights_rows(review)]
            out += ["", "### Who gains and who loses, per namespace", "", "| Namespace | Gains | Loses |",
                    "|---|---|---|"]
            out += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in namespace_rows(review)]
        out += ["", "### Approvals", ""]
        out += [f"- {'✅' if a not in review.missing else '❌'} {a}" for a in review.required]
    out += ["", f"**{verdict(review)}**", ""]
    return "\n".join(out)


def render_json(review: Review) -> str:
    return json.dumps({**review.as_dict(), "platform_version": PLATFORM_VERSION}, indent=2)
