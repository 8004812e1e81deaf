"""The summary table printed at the end of a probe run: probe, layer, result, figure."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest


@dataclass
class Results:
    outcomes: dict[str, str] = field(default_factory=dict)
    figures: dict[str, str] = field(default_factory=dict)
    layers: dict[str, list[str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)

    def record(self, report: pytest.TestReport) -> None:
        nodeid = report.nodeid
        if nodeid not in self.order:
            self.order.append(nodeid)
        previous = self.outcomes.get(nodeid)
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            outcome = report.outcome
            if report.outcome == "skipped" and hasattr(report, "wasxfail"):
                outcome = "xfailed"
            elif report.outcome == "failed" and report.when == "setup":
                outcome = "error"
            self.outcomes[nodeid] = outcome
            if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
                self.reasons[nodeid] = str(report.longrepr[2]).removeprefix("Skipped: ")
            elif report.outcome == "failed":
                text = getattr(report, "longreprtext", "") or ""
                first = next((line for line in text.splitlines() if line.startswith("[")), "")
                if first:
                    self.reasons[nodeid] = first
        elif report.when == "teardown" and report.outcome == "failed" and previous == "passed":
            self.outcomes[nodeid] = "error"


STYLE = {"passed": "green", "failed": "bold red", "error": "bold red", "skipped": "yellow", "xfailed": "yellow"}


def print_summary(terminalreporter, results: Results, wall_seconds: float) -> None:
    if not results.order:
        return
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain fallback
        Console = None  # type: ignore[assignment]
    rows = []
    for nodeid in results.order:
        outcome = results.outcomes.get(nodeid, "?")
        name = nodeid.split("::", 1)[-1]
        module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")
        figure = results.figures.get(nodeid, "")
        if outcome in ("skipped", "failed", "error") and results.reasons.get(nodeid):
            reason = results.reasons[nodeid]
            figure = f"{figure} | {reason}" if figure else reason
        rows.append((f"{module}::{name}", "+".join(results.layers.get(nodeid, [])) or "-", outcome,
                     f"{results.seconds.get(nodeid, 0.0):.1f}", figure))
    title = f"platform probes: {sum(r[2] == 'passed' for r in rows)}/{len(rows)} passed in {wall_seconds:.0f}s"
    if Console is not None:
        table = Table(title=title, show_lines=False)
        for column in ("probe", "layer", "result", "s", "figure"):
            table.add_column(column, overflow="fold", no_wrap=column in ("result", "s"))
        for probe, layer, outcome, seconds, figure in rows:
            table.add_row(probe, layer, f"[{STYLE.get(outcome, 'white')}]{outcome}[/]", seconds, figure)
        buffer = io.StringIO()
        width = max(terminalreporter._tw.fullwidth, 160)
        Console(file=buffer, width=width, force_terminal=terminalreporter.isatty(),
                color_system="auto" if terminalreporter.isatty() else None).print(table)
        terminalreporter.write_line("")
        for line in buffer.getvalue().rstrip("\n").splitlines():
            terminalreporter.write_line(line)
    else:
        terminalreporter.write_sep("=", title)
        for row in rows:
            terminalreporter.write_line(" | ".join(row))
