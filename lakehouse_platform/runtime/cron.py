"""Cron schedules as crontab(5) defines them, parsed once (UTC): for spec validation, the scheduler, EventBridge.

One parser, so what the spec accepts is what the scheduler runs and what the aws target renders:
``parse_cron`` turns an expression into a ``CronSchedule`` (the sets of minutes, hours, days, months
and weekdays it fires on, and how its two day fields combine); the scheduler builds its APScheduler
triggers from those sets (``lakehouse_platform.runtime.scheduler.apscheduler_trigger``), never from the text,
and ``eventbridge_expression`` renders them in EventBridge Scheduler's form.

The semantics are crontab(5)'s (Vixie cron, cronie), in UTC:

- five fields: minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-7 or
  sun-sat, where 0 and 7 are both Sunday; names are three letters, in any case;
- a field is a list of items (``1,15``), each ``*``, a value or a range ``a-b``, and ``*`` or a range
  may take a step (``*/15``, ``1-30/2``);
- when both day fields are restricted (neither is ``*``), a day matches if *either* matches
  (``0 3 1 * 1``: the 1st of every month and every Monday); otherwise both must.

Refused, because cron implementations read them differently: a step after a single value (``5/20``:
Vixie cron reads 5, others 5-59/20), a range that wraps (``fri-mon``), and a day field that starts
with ``*`` but is not ``*`` (``*/2``) beside a restricted other day field (Vixie cron then requires
both, others either). Also refused: a step as long as its whole field (it fires at the first value
only), a value out of range, and a schedule that never fires (``0 3 31 2 *``).

Standard library only: the scheduler's container carries this package alone.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Literal

__all__ = ["CronError", "CronSchedule", "cron_max_interval_minutes", "eventbridge_expression", "parse_cron",
           "value_list"]

MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: Days a month can have (February: 29, in leap years).
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: A schedule that fires at all fires within this many days (February 29th: at most 8 years apart, over 2100).
_SEARCH_DAYS = 9 * 366
_ITEM = re.compile(r"^(?P<head>\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>[0-9]+))?$")


class CronError(ValueError):
    """A cron expression this platform does not run; the message says what is wrong and what is allowed."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] is the value low + i

    @property
    def allowed(self) -> str:
        if self.name == "day-of-week":
            return "0-7 or sun-sat (0 and 7 are Sunday)"
        if self.names:
            return f"{self.low}-{self.high} or {self.names[0]}-{self.names[-1]}"
        return f"{self.low}-{self.high}"


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day-of-month", 1, 31),
    _Field("month", 1, 12, MONTH_NAMES),
    _Field("day-of-week", 0, 7, WEEKDAY_NAMES),
)


@dataclass(frozen=True)
class CronSchedule:
    """When a cron expression fires (UTC): the values of each field and how the two day fields combine."""

    expression: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]  # days of the month, 1-31
    months: tuple[int, ...]  # 1-12
    weekdays: tuple[int, ...]  # 0 = Sunday ... 6 = Saturday
    #: ``either``: both day fields are restricted, a day matching one of them fires (crontab(5));
    #: ``both``: at least one of them is ``*`` (all days), a day must match both.
    day_rule: Literal["either", "both"]

    @property
    def every_day_of_month(self) -> bool:
        return self.days == tuple(range(1, 32))

    @property
    def every_weekday(self) -> bool:
        return self.weekdays == tuple(range(7))

    def fires_on(self, day: date) -> bool:
        """Whether the schedule fires at some time of ``day``."""
        if day.month not in self.months:
            return False
        on_day, on_weekday = day.day in self.days, day.isoweekday() % 7 in self.weekdays
        return (on_day or on_weekday) if self.day_rule == "either" else (on_day and on_weekday)

    def fire_times(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Every fire time ``t`` with ``start < t <= end`` (aware datetimes), in order."""
        start, end = start.astimezone(UTC), end.astimezone(UTC)
        day = start.date()
        while day <= end.date():
            if self.fires_on(day):
                for hour in self.hours:
                    for minute in self.minutes:
                        moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)
                        if start < moment <= end:
                            yield moment
            day += timedelta(days=1)

    def next_after(self, moment: datetime) -> datetime | None:
        """The first fire time strictly after ``moment`` (None: it never fires, which parsing refuses)."""
        return next(self.fire_times(moment, moment + timedelta(days=_SEARCH_DAYS)), None)

    def max_interval_minutes(self, horizon_days: int = 35) -> float:
        """The longest gap between two runs over ``horizon_days`` from a fixed Monday (UTC).

        35 days cover every weekday and month-day pattern at least once; a schedule that fires less
        often than that (``0 0 29 2 *``) reports the horizon itself, which is more than any promise.
        """
        start = datetime(2026, 1, 5, tzinfo=UTC) - timedelta(minutes=1)
        times = list(self.fire_times(start, start + timedelta(days=horizon_days)))
        gaps = [(later - earlier).total_seconds() / 60 for earlier, later in pairwise(times)]
        return max(gaps) if gaps else horizon_days * 24 * 60.0


def _value(token: str, field: _Field, text: str) -> int:
    if token.isdigit():
        number = int(token)
    elif token in field.names:
        number = field.low + field.names.index(token)
    else:
        what = "a number or a name" if field.names else "a number"
        raise CronError(f"{field.name} {text!r}: {token!r} is not {what}; allowed: {field.allowed}")
    if not field.low <= number <= field.high:
        raise CronError(f"{field.name} {number} is out of range; allowed: {field.allowed}")
    return number


def _parse_field(text: str, field: _Field) -> tuple[int, ...]:
    """The values of one field (day-of-week folded to 0-6, Sunday 0)."""
    values: set[int] = set()
    for item in text.lower().split(","):
        match = _ITEM.match(item)
        if match is None:
            raise CronError(f"{field.name} {text!r}: {item!r} is not *, a value or a range a-b (with an optional "
                            f"/step after * or a range); allowed values: {field.allowed}")
        head, step_text = match.group("head"), match.group("step")
        # '*' of the day of week is Sunday to Saturday (7 is only another name for Sunday).
        high = 6 if field.name == "day-of-week" else field.high
        if head == "*":
            first, last = field.low, high
        elif "-" in head:
            first, last = (_value(token, field, text) for token in head.split("-"))
            if first > last:
                raise CronError(f"{field.name} {text!r}: the range {head!r} wraps around, which cron implementations "
                                f"read differently; write it as two ranges ({first}-{field.high},{field.low}-{last})")
        else:
            first = last = _value(head, field, text)
            if step_text is not None:
                raise CronError(f"{field.name} {text!r}: {item!r} puts a step after a single value, which cron "
                                f"implementations read differently; write {head}-{high}/{step_text} "
                                f"(or {head} alone)")
        step = 1
        if step_text is not None:
            step = int(step_text)
            span = last - first + 1
            if step == 0:
                raise CronError(f"{field.name} {text!r}: a step of 0; a step is at least 1")
            if step >= span and span > 1:
                raise CronError(f"{field.name} {text!r}: a step of {step} spans the whole range {first}-{last}, so it "
                                f"fires at {first} only; write {first}")
        values.update(range(first, last + 1, step))
    if field.name == "day-of-week":
        values = {v % 7 for v in values}
    return tuple(sorted(values))


def parse_cron(expression: str) -> CronSchedule:
    """The schedule of a five-field cron expression (crontab(5), UTC); ``CronError`` naming what is wrong."""
    parts = expression.split()
    if len(parts) != 5:
        raise CronError(f"{expression!r} is not a cron expression of five fields (minute hour day month weekday)")
    try:
        minutes, hours, days, months, weekdays = (_parse_field(text, field) for text, field in zip(parts, _FIELDS,
                                                                                                  strict=True))
    except CronError as exc:
        raise CronError(f"{expression!r} is not a valid cron expression: {exc}") from None
    day_text, weekday_text = parts[2], parts[4]
    if day_text != "*" and weekday_text != "*" and (day_text.startswith("*") or weekday_text.startswith("*")):
        raise CronError(
            f"{expression!r} restricts the day of month ({day_text!r}) and the day of week ({weekday_text!r}) with a "
            "field that starts with * but is not *, which cron implementations combine differently (Vixie cron: "
            "both must match; others: either); write that field without * (e.g. 1-31/2 for */2)")
    schedule = CronSchedule(expression, minutes, hours, days, months, weekdays,
                            "either" if day_text != "*" and weekday_text != "*" else "both")
    if schedule.day_rule == "both" and not any(day <= _MONTH_DAYS[month - 1] for month in months for day in days):
        month_names = ", ".join(calendar.month_name[m] for m in months)
        raise CronError(f"{expression!r} never fires: day {', '.join(map(str, days))} of the month does not occur "
                        f"in {month_names}")
    return schedule


def cron_max_interval_minutes(schedule: str, horizon_days: int = 35) -> float:
    """The longest gap between two runs of a valid cron expression (see ``CronSchedule.max_interval_minutes``)."""
    return parse_cron(schedule).max_interval_minutes(horizon_days)


def value_list(values: Sequence[int], label: Sequence[str] | None = None) -> str:
    """Sorted ``values`` as a field expression, ``1,2,3,5`` as ``1-3,5`` (with ``label``: each value by its name)."""
    def name(value: int) -> str:
        return label[value] if label is not None else str(value)

    groups: list[list[int]] = []
    for value in values:
        if groups and value == groups[-1][-1] + 1:
            groups[-1].append(value)
        else:
            groups.append([value])
    return ",".join(name(g[0]) if len(g) == 1 else f"{name(g[0])}-{name(g[-1])}" for g in groups)


def eventbridge_expression(schedule: CronSchedule) -> str:
    """The schedule as an EventBridge Scheduler ``cron()`` (six fields, weekdays by name, one day field ``?``).

    Rendered from the parsed values, so nothing of cron's numbering (Sunday 0 or 7) reaches EventBridge's
    (Sunday 1). EventBridge takes only one of the two day fields, so a schedule restricting both (cron
    fires when either matches) is refused.
    """
    if schedule.day_rule == "either":
        raise CronError(f"{schedule.expression!r} restricts both the day of month and the day of week (cron fires "
                        "when either matches); EventBridge Scheduler accepts only one of them: set the other to *, "
                        "or declare two jobs")

    def field(values: tuple[int, ...], full: range) -> str:
        return "*" if values == tuple(full) else value_list(values)

    minute, hour, month = field(schedule.minutes, range(60)), field(schedule.hours, range(24)), \
        field(schedule.months, range(1, 13))
    if schedule.every_weekday:
        day, weekday = field(schedule.days, range(1, 32)), "?"
    else:
        assert schedule.every_day_of_month  # "both" with a restricted weekday: the day of month is '*'
        day, weekday = "?", value_list(schedule.weekdays, [n.upper() for n in WEEKDAY_NAMES])
    return f"cron({minute} {hour} {day} {month} {weekday} *)"
