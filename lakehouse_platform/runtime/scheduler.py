"""The platform's scheduler service: APScheduler with cron triggers, one role per service.

``python -m lakehouse_platform.runtime scheduler --config operations.json --role maintenance --listen 127.0.0.1:PORT``

* role ``maintenance`` (the orchestration layer's ``maintenance-scheduler``): one job per entry of
  the spec's ``maintenance``, on its cron (UTC), each running its action on its tables through the stack's SQL engine
  (``maintenance.run_job``);
* role ``backup`` (the recovery layer's ``catalog-backup``): the catalog backups on
  ``recovery.backup_schedule`` (``backup.backup_all``), plus one at start when the newest is older
  than one interval, so a platform that was down does not wait for the next slot.

Cron expressions are parsed by ``lakehouse_platform.runtime.cron`` (crontab(5): the parser the spec validates
with) and each trigger is built from the parsed values (``apscheduler_trigger``), never with
APScheduler's own crontab reader, which counts weekdays from Monday (``0 5 * * 0`` would run on Monday).

Every run is recorded (``runs``); a schedule that fires while its previous run is still going, or
that was missed by more than the grace time, is recorded as ``skipped``, never silently dropped.
Jobs run on a small thread pool; the per-table lock (``locks``) keeps two operations off one table.
The HTTP endpoint (loopback only) answers ``GET /healthz`` and ``GET /jobs`` (each job's next run).
SIGTERM waits for running jobs, then exits.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import apscheduler
from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobExecutionEvent, JobSubmissionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger

from lakehouse_platform.runtime import runs
from lakehouse_platform.runtime.config import LISTEN_BACKLOG, Credentials, OperationsConfig
from lakehouse_platform.runtime.cron import CronSchedule, parse_cron, value_list

ROLES = ("maintenance", "backup")
MISFIRE_GRACE_S = 300
WORKERS = 2
BACKUP_JOB_ID = "backup-catalog"
# At start, a due backup waits for the catalogs' databases (they start beside this service): 5 minutes at most.
CATCH_UP_ATTEMPTS = 30
CATCH_UP_WAIT_S = 10

JobFunction = Callable[[], Any]
#: APScheduler's weekday names by its own numbering (Monday = 0); cron's Sunday 0 is its ``sun``.
_APSCHEDULER_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _values(values: tuple[int, ...], full: range) -> str:
    """An APScheduler field expression for exactly ``values``: ``*``, or values and ranges (``1-5,7``)."""
    return "*" if values == tuple(full) else value_list(values)


def apscheduler_trigger(schedule: CronSchedule | str) -> BaseTrigger:
    """An APScheduler trigger firing exactly when the cron schedule does (UTC), built from its parsed values.

    Weekdays are passed by name (cron's Sunday 0 is APScheduler's ``sun``, its 6). When both day fields
    are restricted, cron fires on a day matching either; APScheduler's fields all have to match, so that
    is two triggers, one per day field, combined with ``OrTrigger``.
    """
    cron = parse_cron(schedule) if isinstance(schedule, str) else schedule
    weekdays = "*" if cron.every_weekday else ",".join(
        _APSCHEDULER_WEEKDAYS[(day - 1) % 7] for day in sorted(cron.weekdays, key=lambda d: (d - 1) % 7))

    def trigger(day: str, day_of_week: str) -> CronTrigger:
        return CronTrigger(minute=_values(cron.minutes, range(60)), hour=_values(cron.hours, range(24)), day=day,
                           month=_values(cron.months, range(1, 13)), day_of_week=day_of_week, timezone=UTC)

    days = _values(cron.days, range(1, 32))
    if cron.day_rule == "either":
        return OrTrigger([trigger(days, "*"), trigger("*", weekdays)])
    return trigger(days, weekdays)


class ScaledTrigger(BaseTrigger):
    """A trigger on a clock that runs ``speedup`` times faster than real time from ``origin`` (benchmarks, drills).

    Real time ``t`` is virtual time ``origin + (t - origin) * speedup``; the wrapped trigger is asked for its next
    fire time on that clock, and the answer mapped back. Both ways are exact in whole microseconds, and the way
    back rounds up, so a fire time never maps to a virtual moment before the one it fired for: the next fire
    is always a later one.
    """

    def __init__(self, trigger: BaseTrigger, speedup: int, origin: datetime):
        self.trigger, self.speedup, self.origin = trigger, speedup, origin

    def _virtual(self, moment: datetime) -> datetime:
        return self.origin + (moment - self.origin) * self.speedup

    def _real(self, moment: datetime) -> datetime:
        elapsed_us = (moment - self.origin) // timedelta(microseconds=1)
        return self.origin + timedelta(microseconds=-(-elapsed_us // self.speedup))

    def get_next_fire_time(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
        previous = self._virtual(previous_fire_time) if previous_fire_time is not None else None
        upcoming = self.trigger.get_next_fire_time(previous, self._virtual(now))
        return self._real(upcoming) if upcoming is not None else None

    def __str__(self) -> str:
        return f"{self.trigger} at {self.speedup}x from {self.origin.isoformat(timespec='seconds')}"


def job_trigger(schedule: str, speedup: int = 1, origin: datetime | None = None) -> BaseTrigger:
    """The trigger of a maintenance schedule: its cron (``apscheduler_trigger``), on a sped-up clock when asked."""
    trigger = apscheduler_trigger(schedule)
    if speedup == 1:
        return trigger
    return ScaledTrigger(trigger, speedup, origin or datetime.now(UTC))


def _maintenance_function(config: OperationsConfig, creds: Credentials, job_id: str,
                          config_path: str | None = None) -> JobFunction:
    """A scheduled job's body. With the config's file, each run is a process of its own (``python -m
    lakehouse_platform.runtime maintenance run``, the scheduler's environment and so its credentials): the
    scheduler itself never holds PyIceberg, PyArrow and Trino's client (100 MB it kept after its first run)."""
    def run() -> None:
        if config_path is not None:
            subprocess.run([sys.executable, "-m", "lakehouse_platform.runtime", "maintenance", "run", job_id,
                            "--config", config_path, "--trigger", "schedule"], check=False,
                           stdout=subprocess.DEVNULL)  # each run is in the run record; errors go to the log
            return
        from lakehouse_platform.runtime import maintenance

        job = config.job(job_id)
        assert job is not None
        maintenance.run_job(config, creds, job, trigger="schedule")

    return run


def _backup_function(config: OperationsConfig, creds: Credentials) -> JobFunction:
    def run() -> None:
        from lakehouse_platform.runtime import backup

        backup.backup_all(config, creds, trigger="schedule")

    return run


def build(config: OperationsConfig, creds: Credentials, role: str,
          functions: dict[str, JobFunction] | None = None, config_path: str | None = None) -> BackgroundScheduler:
    """The scheduler of one role with its jobs added (not started). ``functions`` replaces job bodies (tests);
    with ``config_path`` (the service's config file) each maintenance run is a process of its own."""
    if role not in ROLES:
        raise ValueError(f"unknown scheduler role {role!r}; known: {', '.join(ROLES)}")
    scheduler = BackgroundScheduler(
        timezone=UTC, executors={"default": ThreadPoolExecutor(WORKERS)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": MISFIRE_GRACE_S},
    )
    functions = functions or {}
    if role == "maintenance":
        origin = datetime.now(UTC)  # one clock for every job: their relative order is the cron's
        for job in config.maintenance:
            threshold = ("each table's retention" if job.action == "expire_snapshots" else
                         f"older than {job.margin_days}d" if job.action == "remove_orphan_files" else "")
            scheduler.add_job(functions.get(job.id) or _maintenance_function(config, creds, job.id, config_path),
                              job_trigger(job.schedule, config.speedup, origin), id=job.id,
                              name=f"{job.action} ({job.scope} tables{', ' + threshold if threshold else ''}), "
                                   f"cron {job.schedule!r}"
                                   + (f" at {config.speedup}x" if config.speedup != 1 else ""))
    elif config.backups is not None:
        scheduler.add_job(functions.get(BACKUP_JOB_ID) or _backup_function(config, creds),
                          apscheduler_trigger(config.backups.schedule), id=BACKUP_JOB_ID,
                          name=f"catalog backups, kept {config.backups.retention_days} days, "
                               f"cron {config.backups.schedule!r}")

    def skipped(event: JobExecutionEvent | JobSubmissionEvent) -> None:
        why = "missed by more than the grace time" if event.code == EVENT_JOB_MISSED else "previous run still running"
        # A missed run is a JobExecutionEvent (one time), an overlapping one a JobSubmissionEvent (a list).
        times = getattr(event, "scheduled_run_times", None) or [getattr(event, "scheduled_run_time", None)]
        job_cfg = config.job(event.job_id)
        name = job_cfg.action if job_cfg else (BACKUP_JOB_ID if event.job_id == BACKUP_JOB_ID else event.job_id)
        db = Path(config.runs_db)
        run = runs.start(db, runs.Run(job=name, target="*", trigger="schedule", engine="scheduler"))
        runs.finish(db, run, "skipped", reason=why, scheduled_for=[str(t) for t in times])

    scheduler.add_listener(skipped, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)
    return scheduler


def describe(scheduler: BackgroundScheduler) -> list[dict[str, Any]]:
    """Each job, its trigger and its next run (UTC)."""
    return [{"id": job.id, "name": job.name, "trigger": str(job.trigger),
             "next_run_time": job.next_run_time.astimezone(UTC).isoformat() if job.next_run_time else None}
            for job in scheduler.get_jobs()]


def backup_due(config: OperationsConfig, now: datetime | None = None) -> bool:
    """Whether the newest backup is older than one backup interval (or there is none)."""
    from lakehouse_platform.runtime import backup
    from lakehouse_platform.runtime.cron import cron_max_interval_minutes

    if config.backups is None:
        return False
    now = now or datetime.now(UTC)
    newest = backup.list_backups(config.backups.dir)
    if not newest:
        return True
    age_min = (now - newest[0].taken_at).total_seconds() / 60
    return age_min > cron_max_interval_minutes(config.backups.schedule)


def sources_ready(config: OperationsConfig) -> bool:
    """Whether every catalog database is there to back up: SQLite files exist, PostgreSQL accepts connections."""
    import socket

    plan = config.backups
    if plan is None:
        return True
    if not all(Path(source.path).exists() for source in plan.sqlite):
        return False
    if plan.postgres is not None:
        try:
            with socket.create_connection((plan.postgres.host, plan.postgres.port), timeout=2):
                pass
        except OSError:
            return False
    return True


def catch_up(scheduler: BackgroundScheduler, config: OperationsConfig, creds: Credentials,
             attempts: int = CATCH_UP_ATTEMPTS) -> None:
    """Back up once as soon as the catalogs' databases are up (they start beside this service), then stop."""

    def attempt(left: int) -> None:
        if not sources_ready(config) and left > 1:
            scheduler.add_job(attempt, "date", run_date=datetime.now(UTC) + timedelta(seconds=CATCH_UP_WAIT_S),
                              args=[left - 1], id="backup-catch-up", replace_existing=True)
            return
        from lakehouse_platform.runtime import backup

        backup.backup_all(config, creds, trigger="schedule")

    scheduler.add_job(attempt, "date", run_date=datetime.now(UTC), args=[attempts], id="backup-catch-up",
                      replace_existing=True)


class BackloggedServer(ThreadingHTTPServer):
    """The scheduler's HTTP endpoint: a thread per request, listening with a real backlog (``LISTEN_BACKLOG``)."""

    request_queue_size = LISTEN_BACKLOG


def serve(config: OperationsConfig, creds: Credentials, role: str, listen: str, config_path: str | None = None) -> int:
    """Run the scheduler and its HTTP endpoint until SIGTERM/SIGINT."""
    scheduler = build(config, creds, role, config_path=config_path)
    scheduler.start()
    if role == "backup" and backup_due(config):
        catch_up(scheduler, config, creds)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                ok = scheduler.running
                body: Any = {"status": "ok" if ok else "stopped", "role": role, "started_at": started_at,
                             "apscheduler": apscheduler.__version__, "jobs": len(scheduler.get_jobs())}
                self._send(200 if ok else 503, body)
            elif self.path == "/jobs":
                self._send(200, {"role": role, "jobs": describe(scheduler)})
            else:
                self._send(404, {"error": f"no such path {self.path}; try /healthz or /jobs"})

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: Any) -> None:
            pass  # health checks every few seconds would flood the log

    host, port = listen.rsplit(":", 1)
    server = BackloggedServer((host, int(port)), Handler)

    def stop(_signum: int, _frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} scheduler ({role}) on {listen}: "
          + "; ".join(f"{j['id']} next {j['next_run_time']}" for j in describe(scheduler)), flush=True)
    try:
        server.serve_forever()
    finally:
        scheduler.shutdown(wait=True)
        server.server_close()
    return 0
