"""Kafka's line of the smoke check: the broker lists the platform's topics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakehouse_platform.services.profiles import host_profiles

#: Its key in the profiles output (``profiles.host.kafka``).
PROFILE = "kafka"


def smoke(outputs: Mapping[str, Any]) -> list[tuple[str, str, bool, str]]:
    """Kafka lists the platform's topics (the ``streams`` output's); nothing where the broker is not the stack's."""
    profile = host_profiles(outputs).get(PROFILE)
    if not profile:
        return []
    check = "Kafka lists the platform's topics"
    try:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": profile["bootstrap.servers"]})
        found = set(admin.list_topics(timeout=10).topics)
        wanted = [t["name"] for t in (outputs.get("streams") or {}).get("topics", [])]
        missing = [t for t in wanted if t not in found]
        return [("compute", check, not missing,
                 f"missing: {missing}" if missing else f"{len(wanted)} topics: {', '.join(wanted)}")]
    except Exception as exc:  # noqa: BLE001 - a smoke check reports, it does not raise
        return [("compute", check, False, str(exc))]
