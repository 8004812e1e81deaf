"""Cron arithmetic shared by the spec's validation and the scheduler (APScheduler's crontab parser, UTC).

Standard library and APScheduler only: the scheduler's container carries this package alone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.triggers.cron import CronTrigger


def cron_max_interval_minutes(schedule: str, horizon_days: int = 35) -> float:
    """The longest gap between two runs of a valid cron schedule (UTC), over ``horizon_days`` from a fixed Monday.

    35 days cover every weekday and month-day pattern at least once; a schedule that fires less
    often than that (``0 0 29 2 *``) reports the horizon itself, which is more than any promise.
    """
    trigger = CronTrigger.from_crontab(schedule, timezone="UTC")
    start = datetime(2026, 1, 5, tzinfo=UTC)
    end = start + timedelta(days=horizon_days)
    previous, fire, longest = None, trigger.get_next_fire_time(None, start), 0.0
    while fire is not None and fire <= end:
        if previous is not None:
            longest = max(longest, (fire - previous).total_seconds() / 60)
        previous, fire = fire, trigger.get_next_fire_time(fire, fire + timedelta(seconds=1))
    if previous is None or longest == 0.0:
        return horizon_days * 24 * 60.0
    return longest
