"""Cron schedules on every target agree with an independent cron implementation (croniter) over a year.

The parser (``lakehouse_platform.runtime.cron``), the native and docker scheduler's APScheduler triggers built from it, and
the EventBridge Scheduler expressions the aws target renders are each checked against croniter's reading of the
same crontab(5) expression: the next fire time after a moment on every day of a year (at a different time of
day each day).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from croniter import croniter

from lakehouse_platform.runtime.cron import CronError, eventbridge_expression, parse_cron
from lakehouse_platform.runtime.scheduler import apscheduler_trigger

# Weekdays by number (0 and 7 are Sunday) and by name, ranges, steps, lists, months, both day fields.
EXPRESSIONS = [
    "0 3 * * *",
    "0 5 * * 0",  # the lab's rewrite_manifests: Sunday
    "0 6 * * 7",  # Sunday again
    "30 2 * * 1-5",
    "0 4 * * mon-fri",
    "15 1 * * SAT,sun",
    "0 0 * * 5-7",
    "0 */6 * * *",
    "*/15 * * * *",
    "10-50/20 8-18 * * *",
    "0 0 1 * *",
    "0 12 1,15 * *",
    "45 23 31 * *",
    "0 0 * jan,jul *",
    "0 0 1 */3 *",
    "0 9 * feb-apr tue",
    "0 0 29 2 *",
    "0 3 1 * 1",  # both day fields restricted: the 1st or a Monday
    "0 0 13 * fri",  # the 13th or a Friday
    "0 8 1-7 * mon",
]
YEAR = datetime(2027, 1, 1, tzinfo=UTC)


def moments() -> list[datetime]:
    """One moment on every day of the year, at a different time of day each day (never on a minute)."""
    return [YEAR + timedelta(days=day, minutes=(day * 37) % 1440, seconds=30) for day in range(365)]


def croniter_next(expression: str, moment: datetime) -> datetime:
    return croniter(expression, moment).get_next(datetime)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_parser_and_the_scheduler_fire_when_croniter_says(expression: str) -> None:
    schedule = parse_cron(expression)
    trigger = apscheduler_trigger(schedule)
    disagreements = []
    for moment in moments():
        expected = croniter_next(expression, moment)
        ours = schedule.next_after(moment)
        scheduled = trigger.get_next_fire_time(None, moment)
        if not expected == ours == scheduled:
            disagreements.append((moment.isoformat(), expected.isoformat(), ours, scheduled))
    assert disagreements == []


def eventbridge_as_crontab(expression: str) -> str:
    """An EventBridge ``cron(m h dom mon dow year)`` read as crontab(5): ``?`` is "any", weekdays are by name."""
    match = re.fullmatch(r"cron\((\S+) (\S+) (\S+) (\S+) (\S+) \*\)", expression)
    assert match is not None, expression
    minute, hour, day, month, weekday = (field.replace("?", "*") for field in match.groups())
    assert not re.search(r"\d", weekday), f"weekdays must be rendered by name: {expression}"
    assert (day == "*") or (weekday == "*"), f"EventBridge takes one day field only: {expression}"
    return f"{minute} {hour} {day} {month} {weekday}"


@pytest.mark.parametrize("expression", [e for e in EXPRESSIONS if parse_cron(e).day_rule == "both"])
def test_the_eventbridge_rendering_fires_when_croniter_says(expression: str) -> None:
    rendered = eventbridge_as_crontab(eventbridge_expression(parse_cron(expression)))
    disagreements = [(m.isoformat(), croniter_next(expression, m), croniter_next(rendered, m))
                     for m in moments() if croniter_next(expression, m) != croniter_next(rendered, m)]
    assert disagreements == []


def test_a_schedule_restricting_both_day_fields_has_no_eventbridge_form() -> None:
    with pytest.raises(CronError, match="EventBridge Scheduler accepts only one of them"):
        eventbridge_expression(parse_cron("0 3 1 * 1"))


def test_the_labs_weekly_maintenance_runs_on_sunday() -> None:
    """APScheduler's own crontab reader counts Monday as 0: these ran on Monday before."""
    for expression in ("0 5 * * 0", "0 6 * * 0", "0 6 * * 7", "0 6 * * sun"):
        fired = apscheduler_trigger(expression).get_next_fire_time(None, YEAR)
        assert fired is not None and fired.strftime("%A") == "Sunday", expression
    assert eventbridge_expression(parse_cron("0 5 * * 0")) == "cron(0 5 ? * SUN *)"


REFUSED = {
    "0 3 31 2 *": "'0 3 31 2 *' never fires: day 31 of the month does not occur in February",
    "0 0 30,31 2 *": "'0 0 30,31 2 *' never fires: day 30, 31 of the month does not occur in February",
    "61 25 * * *": "'61 25 * * *' is not a valid cron expression: minute 61 is out of range; allowed: 0-59",
    "0 0 * * 8": "'0 0 * * 8' is not a valid cron expression: day-of-week 8 is out of range; allowed: 0-7 or "
                 "sun-sat (0 and 7 are Sunday)",
    "0 0 * * sunday": "'0 0 * * sunday' is not a valid cron expression: day-of-week 'sunday': 'sunday' is not a "
                      "number or a name; allowed: 0-7 or sun-sat (0 and 7 are Sunday)",
    "0 0 ? * *": "'0 0 ? * *' is not a valid cron expression: day-of-month '?': '?' is not *, a value or a range a-b "
                 "(with an optional /step after * or a range); allowed values: 1-31",
    "5/20 * * * *": "'5/20 * * * *' is not a valid cron expression: minute '5/20': '5/20' puts a step after a single "
                    "value, which cron implementations read differently; write 5-59/20 (or 5 alone)",
    "0 0 * * fri-mon": "'0 0 * * fri-mon' is not a valid cron expression: day-of-week 'fri-mon': the range 'fri-mon' "
                       "wraps around, which cron implementations read differently; write it as two ranges (5-7,0-1)",
    "*/60 * * * *": "'*/60 * * * *' is not a valid cron expression: minute '*/60': a step of 60 spans the whole range "
                    "0-59, so it fires at 0 only; write 0",
    "0 0 */0 * *": "'0 0 */0 * *' is not a valid cron expression: day-of-month '*/0': a step of 0; a step is at least 1",
    "0 0 */2 * 1": "'0 0 */2 * 1' restricts the day of month ('*/2') and the day of week ('1') with a field that "
                   "starts with * but is not *, which cron implementations combine differently (Vixie cron: both "
                   "must match; others: either); write that field without * (e.g. 1-31/2 for */2)",
    "@daily": "'@daily' is not a cron expression of five fields (minute hour day month weekday)",
}


@pytest.mark.parametrize("expression", list(REFUSED))
def test_expressions_cron_implementations_disagree_on_or_that_never_fire_are_refused(expression: str) -> None:
    with pytest.raises(CronError) as info:
        parse_cron(expression)
    assert str(info.value) == REFUSED[expression]


def test_the_longest_gap_between_runs() -> None:
    assert parse_cron("*/15 * * * *").max_interval_minutes() == 15
    assert parse_cron("0 3 * * *").max_interval_minutes() == 24 * 60
    assert parse_cron("0 5 * * 0").max_interval_minutes() == 7 * 24 * 60
    assert parse_cron("0 0 29 2 *").max_interval_minutes() == 35 * 24 * 60  # rarer than the horizon


def test_the_spec_accepts_cron_s_other_sunday_and_names() -> None:
    """APScheduler's crontab reader refused weekday 7; crontab(5) allows it (and names, in any case)."""
    from lakehouse_platform.model import MaintenanceJob

    for schedule in ("0 6 * * 7", "0 6 * * SUN", "0 6 1 jan-jun *"):
        assert MaintenanceJob(action="rewrite_manifests", schedule=schedule).schedule == schedule
