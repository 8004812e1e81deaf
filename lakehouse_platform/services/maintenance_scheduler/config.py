"""The maintenance scheduler's constants."""

from __future__ import annotations

from lakehouse_platform.model import PlatformSpec, Target
from lakehouse_platform.services.capabilities import SQL_ENGINE
from lakehouse_platform.services.registry import registry

NAME = "maintenance-scheduler"


ROLE = "maintenance"


def check(spec: PlatformSpec) -> list[str]:
    """Declared maintenance has an engine and a scheduler: declared jobs never stop silently."""
    if not spec.maintenance:
        return []
    if registry().provider(spec, SQL_ENGINE) is None:
        engine = registry()[registry().providers(SQL_ENGINE)[0]]
        how = ("its Iceberg procedures, from EventBridge's maintenance tasks" if spec.target is Target.AWS
               else "its Iceberg procedures, from the maintenance scheduler")
        return [f"maintenance: on {spec.target.value} maintenance runs through {engine.display_name} ({how}); "
                f"enable services.{engine.name} or remove maintenance"]
    if spec.target is not Target.AWS and NAME not in spec.enabled_services():
        return [f"maintenance: the jobs are scheduled by services.{NAME}, which is disabled; "
                "enable it or remove maintenance (nothing else runs them)"]
    return []
