"""What the post-deploy probes ask of Flink: its running version, and the support they drive the streaming job with.

Found by the registry (``ProbeHooks``): the version manifest reads Flink's version from its REST API and the Iceberg
runtime from the job manager's classpath; the streaming-writer probes reach this module as the ``STREAMING_WRITER``
capability's support (its REST client, where the job's deployment step records the job, the task manager's log).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lakehouse_platform.services.flink.config import JOB, JOBMANAGER, TASKMANAGER
from lakehouse_platform.services.flink.rest import FlinkJobError, FlinkRest
from lakehouse_platform.services.flink.smoke import PROFILE
from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading, http_json

__all__ = ["JOB", "PROFILE", "WRITER", "FlinkJobError", "FlinkRest", "task_log", "version"]

#: How the probes' reports name the streaming writer.
WRITER = "flink"


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """Flink's version from its REST API (``GET /config``), and the Iceberg runtime on the job manager's classpath."""
    rest = (stack.host_profiles.get(PROFILE) or {}).get("rest")
    if not rest:
        return {}  # on aws MSF runs the job: no REST API of the platform's to read
    found = {JOBMANAGER: VersionReading(http_json(f"{rest}/config").get("flink-version"), f"GET {rest}/config")}
    if hands is not None:
        cmdline = " ".join(p.args for p in hands.processes(JOBMANAGER))
        match = re.search(r"iceberg-flink-runtime-[0-9.]+-(\d+(?:\.\d+)+)\.jar", cmdline)
        if match:
            found[f"iceberg in {JOBMANAGER}"] = VersionReading(
                match.group(1), "iceberg-flink-runtime jar on the job manager's classpath")
    return found


def task_log(stack: DeployedStack) -> str | None:
    """The task manager's log file, where the stack records it (natively): its committer's retries are there."""
    return stack.service_record(TASKMANAGER).get("log_file")
