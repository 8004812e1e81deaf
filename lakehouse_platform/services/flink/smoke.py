"""Flink's line of the smoke check: the streaming job runs, with the job id the stack recorded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakehouse_platform.services.profiles import host_profiles

#: Its key in the profiles output (``profiles.host.flink``).
PROFILE = "flink"


def job_running(profile: Mapping[str, Any], jobs: Mapping[str, Any]) -> tuple[str, str, bool, str]:
    """The streaming job is RUNNING (every task) on the job manager, with the job id the stack recorded."""
    from lakehouse_platform.services.flink.rest import FlinkJobError, FlinkRest

    check = "Flink runs the streaming job"
    name = profile["job"]["name"]
    try:
        rest = FlinkRest(profile["rest"], timeout_s=10)
        found = rest.find(name)
        if found is None:
            return ("compute", check, False, f"no running job named {name} at {profile['rest']}")
        job = rest.job(str(found["jid"])) or {}
        tasks = sorted({v.get("status", "?") for v in job.get("vertices", [])})
        recorded = next((j.get("job_id") for j in jobs.values() if j.get("job_name") == name), None)
        completed = rest.checkpoints(str(found["jid"])).get("counts", {}).get("completed", 0)
        ok = job.get("state") == "RUNNING" and tasks == ["RUNNING"] and recorded == found["jid"]
        detail = f"{name} {job.get('state')}, tasks {tasks}, {completed} checkpoints completed"
        if recorded != found["jid"]:
            detail += f"; the stack recorded job {recorded}, Flink runs {found['jid']}"
        return ("compute", check, ok, detail)
    except FlinkJobError as exc:
        return ("compute", check, False, str(exc))


def smoke(outputs: Mapping[str, Any]) -> list[tuple[str, str, bool, str]]:
    """The job's line where Flink runs here (its REST API in the host profile; not on aws, where MSF runs it)."""
    profile = host_profiles(outputs).get(PROFILE) or {}
    return [job_running(profile, outputs.get("jobs") or {})] if "rest" in profile else []
