"""Probe 6 — resident memory of each service after the probes, against its budget (observability).

Read through the target (``support.control``) once the other probes have run: natively the resident set
size of every service process (``native.services[*].pid``) plus all its children (psutil); in the lab each
server container's memory as ``docker stats`` shows it (the cgroup's usage less its inactive file cache; the
engine also holds the container to its budget, its memory limit). Compared with the service's memory budget.
Like the chapter's table, it is one instant on a platform that has just been worked, not a peak under load.
The Spark driver of this probe run is shown for scale (no budget: it is a client, not a service).
"""

from __future__ import annotations

import psutil
import pytest

from lakehouse_platform.probes.support import control, engines
from lakehouse_platform.probes.support.stack import Stack, fail

pytestmark = [pytest.mark.observability, pytest.mark.safe]  # reads resident memory

MiB = 1024 * 1024


def tree_rss(pid: int) -> tuple[int, int]:
    """(bytes resident, process count) of ``pid`` and its recursive children."""
    root = psutil.Process(pid)
    total, count = 0, 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
            count += 1
        except psutil.Error:
            continue
    return total, count


def human(size: int) -> str:
    return f"{size / (1024 * MiB):.2f} GB" if size >= 1024 * MiB else f"{size / MiB:.0f} MB"


def test_resident_memory_within_budget(stack: Stack, figure, say):
    stack.reload()  # a restart earlier in the run changed pids
    ctl = control.control(stack)
    services = ctl.services()
    if not services:
        pytest.skip(f"target {stack.target}: no running services in the outputs")
    roles = {name: (svc or {}).get("version", "") for row in stack.outputs.get("ownership") or []
             for name, svc in (row.get("services") or {}).items()}
    layers = {name: row["layer"] for row in stack.outputs.get("ownership") or [] for name in (row.get("services") or {})}
    rows, over, gone = [], [], []
    total = 0
    for name, budget in services.items():
        try:
            memory = ctl.memory(name)
        except (control.ServiceControlError, psutil.Error) as exc:
            gone.append({"service": name, "where": ctl.describe(name), "error": f"{type(exc).__name__}: {exc}"})
            continue
        rss, count = memory.bytes, memory.processes
        total += rss
        share = rss / budget if budget else None
        rows.append((name, roles.get(name, ""), rss, count, budget, share))
        if budget and rss > budget:
            over.append({"service": name, "where": ctl.describe(name), "layer": layers.get(name, "?"), "rss": human(rss),
                         "processes": count, "budget": human(budget), "measured": memory.source})
    driver = engines.spark_driver_pid()
    say("| Service | Pin | Resident memory | Processes | Budget | Of budget |")
    say("|---|---|---|---|---|---|")
    for name, pin, rss, count, budget, share in rows:
        say(f"| {name} | {pin} | {human(rss)} | {count} | {human(budget) if budget else '-'} | "
            f"{f'{share:.0%}' if share is not None else '-'} |")
    if driver:
        try:
            rss, count = tree_rss(driver)
            say(f"| spark driver (this run, local[1], -Xmx {engines.SPARK_DRIVER_MEMORY}) | - | {human(rss)} | {count} | - | - |")
        except psutil.Error:
            pass
    say(f"== the platform's services resident at once: {human(total)}")
    figure(f"{human(total)} across {len(rows)} services; " + ", ".join(
        f"{n} {human(r)}/{human(b) if b else '-'}" for n, _, r, _, b, _ in rows))
    if gone:
        layer = layers.get(gone[0]["service"], "compute")
        fail(stack, layer, f"{len(gone)} service(s) in the outputs are not running", gone)
    if over:
        fail(stack, over[0]["layer"], f"{len(over)} service(s) hold more resident memory than their budget", over)
