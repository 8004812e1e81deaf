"""Connect's line of the smoke check: every declared connector runs, with all its tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakehouse_platform.services.profiles import host_profiles

#: Its key in the profiles output (``profiles.host.kafka_connect``).
PROFILE = "kafka_connect"


def smoke(outputs: Mapping[str, Any]) -> list[tuple[str, str, bool, str]]:
    """Connect runs every connector of the ``streams`` output (RUNNING, all tasks); nothing where it does not run."""
    import requests

    profile = host_profiles(outputs).get(PROFILE)
    if not profile:
        return []
    check = "Connect runs every connector (RUNNING, all tasks)"
    try:
        base = profile["url"]
        status = requests.get(f"{base}/connectors?expand=status", timeout=10).json()
        states = {name: [body["status"]["connector"]["state"], *(t["state"] for t in body["status"]["tasks"])]
                  for name, body in status.items()}
        wanted = [c["name"] for c in (outputs.get("streams") or {}).get("connectors", [])]
        bad = {n: states.get(n, ["ABSENT"]) for n in wanted if set(states.get(n, ["ABSENT"])) != {"RUNNING"}}
        running = ", ".join(f"{n} RUNNING" for n in wanted)
        return [("compute", check, not bad, f"not running: {bad}" if bad else running)]
    except Exception as exc:  # noqa: BLE001 - a smoke check reports, it does not raise
        return [("compute", check, False, str(exc))]
