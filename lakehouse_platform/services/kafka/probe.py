"""What the post-deploy probes ask of Kafka: the broker's version, from its process's classpath (no HTTP API)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lakehouse_platform.services.kafka.config import KAFKA
from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """The broker's version from its process's classpath (kafka_2.13-<version>.jar); nothing without hands."""
    if hands is None:
        return {}
    args = " ".join(p.args for p in hands.processes(KAFKA)).split()
    where = hands.describe(KAFKA)
    pattern = r"kafka_2\.13-(\d+(?:\.\d+)+)\.jar"
    match = re.search(pattern, " ".join(args))
    if not match:  # a wildcard classpath: the jar is in the directory it names
        for arg in args:
            for entry in arg.strip("'\"").split(":"):
                if entry.endswith("/*"):
                    jars = [n for n in hands.list_dir(KAFKA, entry[:-2]) if re.fullmatch(pattern, n)]
                    match = match or (re.search(pattern, jars[0]) if jars else None)
    if not match:
        raise RuntimeError(f"no kafka_2.13 jar on the classpath of {where}")
    return {KAFKA: VersionReading(match.group(1), f"classpath of {where} (kafka_2.13-{match.group(1)}.jar)")}
