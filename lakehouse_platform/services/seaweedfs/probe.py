"""What the post-deploy probes ask of SeaweedFS: its version, from the master's status or the weed binary."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from lakehouse_platform.services.probing import DeployedStack, ServiceHands, VersionReading, http_json
from lakehouse_platform.services.seaweedfs.config import NAME, release_of


def version(stack: DeployedStack, hands: ServiceHands | None) -> Mapping[str, VersionReading]:
    """The master's ``/dir/status`` (``"30GB 4.53 7506e5f91cd6"``: build flavour, version, commit), else ``weed
    version`` of the binary the stack records; a large-disk build (``8000GB``) reads ``<release>_large_disk``."""
    import requests

    master = stack.endpoint(NAME, "master")
    if master:
        try:
            status = http_json(f"http://{master}/dir/status")
            if status.get("Version"):
                return {NAME: VersionReading(release_of(status["Version"]),
                                             f"GET http://{master}/dir/status ({status['Version']})")}
        except (requests.RequestException, ValueError):
            pass
    argv0 = stack.service_record(NAME).get("argv0")
    if argv0:
        done = subprocess.run([argv0, "version"], capture_output=True, text=True, timeout=30, check=False)
        return {NAME: VersionReading(release_of(done.stdout), f"{argv0} version ({done.stdout.strip()})")}
    raise RuntimeError("no master endpoint answering /dir/status and no weed binary in the outputs")
