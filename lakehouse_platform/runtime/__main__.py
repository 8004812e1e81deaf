"""``python -m lakehouse_platform.runtime``: what runs inside a platform container or process, from its config file.

    scheduler --config F --role maintenance|backup --listen H:P   the scheduler service itself
    maintenance run [<job>] --config F [--table T]               one maintenance job now (aws: EventBridge's task,
                                                                 the job from $MAINTENANCE_JOB)

Credentials come from the environment (``Credentials.from_env``), never from the config file. The operator's
commands against a deployed stack (maintenance on demand, runs, recovery, tables) are ``python -m
lakehouse_platform.control``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from lakehouse_platform.runtime.config import ENV_MAINTENANCE_JOB, Credentials, OperationsConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakehouse_platform.runtime",
                                     description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("scheduler", help="run the scheduler service (what the platform starts)")
    s.add_argument("--config", required=True)
    s.add_argument("--role", choices=("maintenance", "backup"), required=True)
    s.add_argument("--listen", required=True, help="host:port of the health/jobs endpoint")
    m = sub.add_parser("maintenance", help="run one maintenance job now")
    m.add_argument("action", choices=("run",))
    m.add_argument("job", nargs="?", default=os.environ.get(ENV_MAINTENANCE_JOB),
                   help=f"a job id or an action (expire_snapshots, ...); default: ${ENV_MAINTENANCE_JOB}")
    m.add_argument("--config", required=True)
    m.add_argument("--table", help="only this table (namespace.name)")
    m.add_argument("--trigger", default="schedule", help="what the run record says started it")
    args = parser.parse_args(argv)
    config = OperationsConfig.load(args.config)
    if args.command == "scheduler":
        from lakehouse_platform.runtime import scheduler

        return scheduler.serve(config, Credentials.from_env(), args.role, args.listen, config_path=args.config)
    from lakehouse_platform.runtime import maintenance

    if not args.job:
        parser.error(f"maintenance run: name a job (or set ${ENV_MAINTENANCE_JOB}); known: "
                     + ", ".join(job.id for job in config.maintenance))
    try:
        done = maintenance.run_job(config, Credentials.from_env(), args.job, trigger=args.trigger, table=args.table,
                                   waiting=lambda message: print(message, file=sys.stderr))
    except maintenance.MaintenanceError as error:
        print(f"maintenance run: {error}", file=sys.stderr)
        return 2
    print(json.dumps([{"job": r.job, "target": r.target, "status": r.status, "detail": r.detail} for r in done],
                     indent=2))
    return 0 if all(r.status == "ok" for r in done) else 1


if __name__ == "__main__":
    sys.exit(main())
