"""A native stack deployed from one clone, that clone then moved away, is refreshed and destroyed from a second
clone in another directory with its own venv, on a backend they share explicitly (issue 25).

For real: two ``git clone``s of this commit (run the tier on a committed tree), each with ``make venv`` and
``make pulumi``, a small platform (store, catalog, gate, exporter, schedulers, declared tables; no Trino,
Flink or Kafka) on ports of this checkout's block. Also checked: no path of either clone (or of this checkout)
in the exported state, and a service that crashes after its checkout moved is restarted by its watchdog.

And two clones with the same stack name on one host (issue 35): the second clone on a backend of its own (its
checkout's, as a fresh clone's ``make up`` would use) is refused by its ``up``, its ``pulumi preview`` and its
``make down``, naming the state directory and its owner, and the first clone's platform keeps running untouched.
The stack is disposable (an isolated copy): its destroy removes its state directory.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from lakehouse_platform.control import isolated
from lakehouse_platform.runtime import watchdog
from tests.support import REPO_ROOT
from tests.support.checkouts import Checkout, CheckoutCommandFailed, backend_env, head_commit, live
from tests.support.polling import wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (REPO_ROOT / ".tools" / "bin" / "pulumi").exists(),
                       reason="the Pulumi CLI is not built: run `make pulumi` (make test does)"),
]

FIRST_PORT = isolated.first_port_of("moved-checkout")
STACK = "moved"  # its state: <state root>/moved-<first port> (isolated_stack)
SMALL = {"maintenance": [], "services": {name: {"enabled": False}
                                         for name in ("trino", "flink-jobmanager", "kafka", "prometheus")}}



def test_a_stack_deployed_from_one_clone_is_refreshed_and_destroyed_from_another(tmp_path: Path) -> None:
    started = time.monotonic()
    env = backend_env(tmp_path / "backend")
    first = Checkout.clone(head_commit(), tmp_path / "first", env)
    first.isolated_stack(STACK, FIRST_PORT, SMALL)
    second: Checkout | None = None
    pids: list[int] = []
    try:
        first.up(STACK)
        deployed = first.outputs(STACK)
        pids = [service["pid"] for service in deployed["native"]["services"].values()]
        state = first.exported_state(STACK)

        second = Checkout.clone(head_commit(), tmp_path / "second", env)
        # The stack's config, with the secrets' salt Pulumi wrote at its creation, into the second clone.
        shutil.copy2(first.root / f"Pulumi.{STACK}.yaml", second.root / f"Pulumi.{STACK}.yaml")

        # The same stack name from a clone on its own backend: refused before any resource, nothing touched.
        other = dataclasses.replace(second, env={}, timings={})
        assert not (other.root / ".pulumi-state").exists(), "a fresh clone: no backend directory yet"
        refusals = {  # `make up`'s command first: on a backend directory that does not exist yet
            "up": lambda: other.control("up", "--stack", STACK),
            "preview": lambda: other.python(f"""
                from lakehouse_platform.control import workspace
                workspace.run({STACK!r}, "preview", quiet=True)
                """, "preview"),
            "down": lambda: other.control("down", "--stack", STACK),
        }
        for command, attempt in refusals.items():
            with pytest.raises(CheckoutCommandFailed) as refused:
                attempt()
            said = " ".join(str(refused.value).split())
            assert f"the state directory {deployed['native']['state_dir']} belongs to stack {STACK!r}" in said, said
            assert "claim --stack moved" in said, (command, said)
            if command != "preview":  # the command line says it in one message, without a traceback
                assert "Traceback" not in said, said
        assert live(pids) == pids, "the second clone's up, preview and down left the first's platform running"
        moved = tmp_path / "first-moved-away"
        first.root.rename(moved)  # the checkout that deployed the stack goes elsewhere (and its venv with it)

        for checkout in (first.root, moved, second.root, REPO_ROOT):
            assert str(checkout) not in state, f"{checkout} is in the stack's state"
        assert live(pids) == pids, "a moved checkout takes no running service with it"

        # A service crashing now is restarted by its watchdog from what the stack owns, not from the checkout.
        gate = deployed["native"]["services"]["catalog-gate"]
        before = watchdog.read_status(gate["data_dir"])
        os.kill(int(before["pid"]), signal.SIGKILL)
        after = wait_for("the gate restarted by its watchdog", lambda: (
            s if (s := watchdog.read_status(gate["data_dir"])).get("pid") not in (None, 0, before["pid"])
            and s.get("state") == "running" else None), 60, 0.5)
        time.sleep(2)
        assert live([int(after["pid"])]), "the restarted gate stays up (its runtime is not in the moved checkout)"

        second.refresh(STACK)
        refreshed = json.loads(second.exported_state(STACK))
        services = [r["outputs"] for r in refreshed["resources"] if r["type"].endswith("native:LocalService")]
        assert services and all(s["alive"] is True for s in services), "refreshed from the second clone: all up"

        second.down(STACK)
        assert live(pids) == [], "destroyed from the second clone: nothing of the stack runs"
        assert not Path(deployed["native"]["state_dir"]).exists(), "a disposable stack's state goes with its destroy"
    finally:
        if live(pids) and second is not None:
            second.down(STACK)
        (second.root if second is not None else first.root).joinpath(f"Pulumi.{STACK}.yaml").unlink(missing_ok=True)
        timings = {**first.timings, **({f"second: {k}": v for k, v in second.timings.items()} if second else {})}
        print(f"\n== moved checkout, {time.monotonic() - started:.0f} s in all: "
              + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()))
