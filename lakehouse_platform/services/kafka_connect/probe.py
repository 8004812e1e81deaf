"""What the post-deploy probes ask of Kafka Connect: the worker's version and each plugin's, from its REST API."""

from __future__ import annotations

from collections.abc import Mapping

from lakehouse_platform.services.kafka_connect.config import CONNECT
from lakehouse_platform.services.kafka_connect.smoke import PROFILE
from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading, http_json


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """The worker's Kafka Connect version (``GET /``) and each plugin's (``GET /connector-plugins``)."""
    import requests

    base = (stack.host_profiles.get(PROFILE) or {}).get("url")
    if not base:
        raise RuntimeError(f"no profiles.host.{PROFILE} in the outputs")
    worker = http_json(f"{base}/")
    plugins = requests.get(f"{base}/connector-plugins", timeout=10).json()
    found = {f"kafka connect in {CONNECT}": VersionReading(str(worker.get("version")), f"GET {base}/")}
    for plugin in plugins:
        if plugin["class"].startswith("io.debezium.connector.postgresql"):
            found[CONNECT] = VersionReading(plugin["version"].removesuffix(".Final"), f"GET {base}/connector-plugins")
        if plugin["class"].startswith("org.apache.iceberg.connect"):
            found[f"iceberg-kafka-connect in {CONNECT}"] = VersionReading(plugin["version"],
                                                                          f"GET {base}/connector-plugins")
    return found
