"""Benchmark: the whole native platform's bring-up from a warm cache, and its resident memory.

Run: .venv/bin/python bench/bench_native.py
Targets: bring-up <= 60 s warm (every service healthy, every connector and job RUNNING); the whole native
platform <= 3.5 GB RSS.

Deploys an isolated copy of the native stack (``bench``: its own block of ports and a fresh state
directory, so it never meets a user's own platform), measures, then destroys it. "Up" is ``pulumi up``
returning: every LocalService passed its health check and every deployment step finished (a connector's
resource returns once it and its tasks are RUNNING, the Flink job's once each of its tasks is); the
streams check and the job's state are read back from Connect and Flink afterwards. Resident memory is
summed over each service's process tree (psutil), right after bring-up, like the chapter's table. The load
average is printed: the machine is shared.
"""

from __future__ import annotations

import os
import re
import time

import psutil

from lakehouse_platform.control import commands, isolated
from lakehouse_platform.control.workspace import forget, outputs, select
from lakehouse_platform.services.registry import registry
from tests.support.stacks import spec_of

STACK = "bench"


def rss_of(pid: int) -> int:
    """Resident bytes of a process and its children."""
    try:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in (proc, *proc.children(recursive=True)))
    except psutil.Error:
        return 0


def main() -> None:
    isolated.isolated_stack(STACK)
    spec = spec_of("native")  # the tests' native stack, the one the isolated copy is made of
    try:
        load = os.getloadavg()
        created: dict[str, tuple[float, float]] = {}  # resource -> (seconds after `up` began it ended, its own)
        started = time.perf_counter()

        def track(line: str) -> None:
            match = re.search(r"(LocalService|FlinkJob) (\S+) created \((\d+(?:\.\d+)?)s\)", line)
            if match:
                created[match.group(2)] = (time.perf_counter() - started, float(match.group(3)))

        select(STACK).up(on_output=track, color="never")
        seconds = time.perf_counter() - started
        out = outputs(STACK)
        print(f"\nbring-up (warm cache, fresh data, pulumi up until every service is healthy and every job "
              f"RUNNING): {seconds:.1f} s (target <= 60 s); load average before {load[0]:.1f}, "
              f"after {os.getloadavg()[0]:.1f} (2 cores)")
        print("resources (ready at, took):", ", ".join(f"{name} {at:.0f}s ({took:.0f}s)" for name, (at, took)
                                                     in sorted(created.items(), key=lambda item: item[1][0])))
        for job, info in (out.get("jobs") or {}).items():
            print(f"job {job}: {info.get('state')}")
        # Each service's own smoke lines (ServiceDefinition.probes.smoke): the streaming job read from Flink, the
        # topics and connectors, Trino's catalogs, Prometheus's targets.
        for definition in registry():
            for _layer, check, ok, detail in definition.probes.smoke(out) if definition.probes.smoke else []:
                print(f"  {'ok' if ok else 'FAILED'}: {check}: {detail}")
        print(f"\n{'service':<18} {'version':<10} {'resident':>10} {'budget':>10}")
        total = 0
        for name, info in out["native"]["services"].items():
            rss = rss_of(info["pid"])
            total += rss
            version = out["native"]["obtained_versions"].get(name, spec.pin_of(name))
            print(f"{name:<18} {version:<10} {rss / 1e6:>8.0f} MB {spec.services[name].memory:>10}")
        print(f"{'total':<29} {total / 1e6:>8.0f} MB   (target: the whole native platform <= 3.5 GB)")
    finally:
        commands.down(STACK, quiet=True)
        forget(STACK)
        isolated.remove_stack_file(STACK)


if __name__ == "__main__":
    main()
