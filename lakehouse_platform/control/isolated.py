"""Isolated stacks: copies of a stack on their own block of ports and their own state directory.

The state directory is named after the stack and its first port (``<state root>/<name>-<first port>``, set as
the stack's ``state_dir``): state lives outside checkouts, and two checkouts testing on one host at once have
blocks of their own, hence directories of their own.

Tests and benchmarks deploy or preview such a stack so they never collide with a user's own
``make up`` platform (stack ``native``), nor with each other. They are copies of this repository's test fixtures
(``tests/support/stack_files``), never of a stack file a team edits, so they exist only in a checkout; their files are
written into the Pulumi project being run (this repository). Every port of every enabled service —
internal ones too: natively every port binds 127.0.0.1 — is renumbered from the stack's block, below
the kernel's ephemeral range (32768+) so an outgoing connection can never hold one.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import yaml

from lakehouse_platform.config import CONFIG_KEY, load_platform, stack_platform
from lakehouse_platform.paths import PACKAGE_PARENT, project_root, state_root

#: The isolated stacks, in the order of their blocks of ports. Some names are a block, not a stack of this
#: checkout's backend: ``bench-gate`` (the gate benchmark's fixture and gate take ports of its block), and the
#: blocks of the e2e tests whose stacks a clone deploys (``moved-checkout``, ``previous-release``, ``upgrade``: the
#: stacks are named ``<block>-<first port>`` and live on the clone's backend) or that name their stack otherwise
#: (``service-down``). ``bumps`` is the version-bump test's stack. The lab's runner publishes its ports after the
#: last block (``lakehouse_platform.lab.runner.first_run_port``): blocks and run together stay within 1000 ports of the
# base,
#: the spacing of two checkouts' bases on one host.
STACKS = ("verify", "e2e", "preview", "bench", "bench-commits", "probe-faults", "bench-gate", "moved-checkout",
          "previous-release", "service-down", "upgrade", "bumps")
#: 28 ports per native platform today: room to grow, and 12 blocks plus a lab run within 1000.
BLOCK_SIZE = 75
DEFAULT_PORT_BASE = 26000
#: What isolated stacks are copies of: the tests' own stack files (``<name>.yaml``, a stack file's shape).
FIXTURES = PACKAGE_PARENT / "tests" / "support" / "stack_files"


#: What ``make verify`` adds to its copy of the stack (``verify``): two canary namespaces and two team identities
#: whose grants differ per namespace, so the governance probe's matrix
# (lakehouse_platform/probes/test_governance_matrix.py)
#: has more answers than the roles give: team-a manages canary_a and reads canary_b; team-b writes canary_b (no
#: manage) and may do nothing anywhere else. Their secrets are lab defaults, like every secret of a native stack.
VERIFY_GOVERNANCE = {
    "governance": {"namespaces": ["canary_a", "canary_b"]},
    "identities": {
        "team-a": {"access_key": "team-a-access-key", "actions": ["Read", "Write", "List"],
                   "secret_config_key": "s3TeamASecretKey",
                   "grants": {"canary_a": ["read", "write", "manage"], "canary_b": ["read"]}},
        "team-b": {"access_key": "team-b-access-key", "actions": ["Read", "Write", "List"],
                   "secret_config_key": "s3TeamBSecretKey", "grants": {"canary_b": ["read", "write"]}},
    },
}


def first_port_of(name: str) -> int:
    """First port of a stack's block: ``$LAKEHOUSE_PORT_BASE`` (default 26000) + ``BLOCK_SIZE`` per stack before it.

    Two checkouts testing on one host at once give each a base of its own.
    """
    base = int(os.environ.get("LAKEHOUSE_PORT_BASE", DEFAULT_PORT_BASE))
    if name not in STACKS:
        raise ValueError(f"{name!r} is not an isolated stack; known: {', '.join(STACKS)}")
    start = base + STACKS.index(name) * BLOCK_SIZE
    if base < 1024 or start + BLOCK_SIZE > 32768:
        raise ValueError(f"LAKEHOUSE_PORT_BASE={base}: the blocks must lie between 1024 and 32767 "
                         "(below the kernel's ephemeral ports)")
    return start


def isolated_state_dir(name: str, first_port: int | None = None) -> Path:
    """The state directory of an isolated stack: ``<state root>/<name>-<its first port>``."""
    return state_root() / f"{name}-{first_port if first_port is not None else first_port_of(name)}"


def fixture_platform(base: str) -> dict:
    """A test fixture's ``lakehouse:platform`` (``tests/support/stack_files/Pulumi.<base>.yaml``, over the fixture its
    ``lakehouse:extends`` names): a fresh copy on every call."""
    if not (FIXTURES / f"Pulumi.{base}.yaml").is_file():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in FIXTURES.glob("Pulumi.*.yaml"))
        raise ValueError(f"no test stack {base!r} in {FIXTURES} (isolated stacks are made in a checkout); "
                         f"known: {', '.join(known)}")
    return stack_platform(base, FIXTURES)


def isolated_platform(name: str, base: str = "native", first_port: int | None = None,
                      overrides: dict | None = None, platform: dict | None = None) -> tuple[dict, range]:
    """The test fixture ``base``'s ``lakehouse:platform`` (or ``platform``, another project's: a team's stack in its
    e2e test) with every port from ``name``'s block, and the ports it uses.

    An isolated stack is a throwaway copy: it is marked ``disposable`` (every probe runs on it, the disruptive ones
    too). ``overrides`` are merged into it (e.g. a service disabled, or ``disposable: False`` to probe it as a stack
    someone relies on).
    """
    start = first_port if first_port is not None else first_port_of(name)
    platform = copy.deepcopy(platform) if platform is not None else fixture_platform(base)
    spec = load_platform(platform)
    platform["disposable"] = True
    services = platform.setdefault("services", {})
    port = start
    for svc_name, svc in spec.enabled_services().items():
        ports = {}
        for port_name, spec_port in svc.ports.items():
            ports[port_name] = {"internal": port, **({"external": port} if spec_port.external is not None else {})}
            port += 1
        if ports:
            services.setdefault(svc_name, {})["ports"] = ports
    if port - start > BLOCK_SIZE:
        raise ValueError(f"stack {name}: {port - start} ports do not fit a block of {BLOCK_SIZE}")
    platform["state_dir"] = str(isolated_state_dir(name, start))
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(platform.get(key), dict):
            for sub, body in value.items():
                platform[key][sub] = {**platform[key].get(sub, {}), **body} if isinstance(body, dict) else body
        else:
            platform[key] = value
    return platform, range(start, port)


def isolated_stack(name: str, base: str = "native", first_port: int | None = None,
                   overrides: dict | None = None) -> Path:
    """Write ``Pulumi.<name>.yaml`` (``isolated_platform``) with an empty state directory; returns its path."""
    platform, ports = isolated_platform(name, base, first_port, overrides)
    path = project_root() / f"Pulumi.{name}.yaml"
    header = (f"# Generated by lakehouse_platform.control.isolated from tests/support/stack_files/Pulumi.{base}.yaml:"
              f" ports {ports.start}-{ports.stop - 1}.\n")
    path.write_text(header
                    + yaml.safe_dump({"config": {CONFIG_KEY: platform}}, sort_keys=False))
    shutil.rmtree(platform["state_dir"], ignore_errors=True)
    return path


def remove_stack_file(name: str) -> None:
    """Delete an isolated stack's file (its state directory is kept for post-mortems)."""
    if name in ("native", "lab", "lab-offline", "cloud"):
        raise ValueError(f"refusing to remove the stack file of {name}")
    (project_root() / f"Pulumi.{name}.yaml").unlink(missing_ok=True)
