"""``python -m infra.operations``: the operating layers on demand, against a deployed stack.

    maintenance run <job> [--table T] [--older-than 10s]   run a job (or an action) now; trigger on-demand
    maintenance list                                       jobs, their tables and their latest runs
    runs [--job J] [--limit N]                             the run record
    recovery backup | list                                 back up the catalogs now | list backups, verified
    recovery restore [--backup FILE] [--no-roll-forward]   restore the default catalog, roll forward, read back
    recovery rebuild                                       no backup: register the newest metadata from storage
    recovery restore-postgres --database D [--backup F]    replace a catalog database with its newest dump
    tables                                                 the declared tables, their owners and promises
    scheduler --config F --role maintenance|backup --listen H:P   the scheduler service itself

Every command but ``scheduler`` reads the stack's outputs (``--stack``, default native; or
``--outputs FILE``), prints JSON, and exits 1 when what it ran failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infra.operations import runs
from infra.operations.config import Credentials, OperationsConfig, from_outputs


def _outputs(args: argparse.Namespace) -> dict[str, Any]:
    if args.outputs:
        loaded: dict[str, Any] = json.loads(Path(args.outputs).read_text())
        return loaded
    from infra.stack.workspace import outputs

    return outputs(args.stack)


def _print(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _run_dict(run: runs.Run) -> dict[str, Any]:
    return {"id": run.id, "job": run.job, "target": run.target, "trigger": run.trigger, "status": run.status,
            "started_at": run.started_at, "ended_at": run.ended_at, "files_removed": run.files_removed,
            "snapshots_removed": run.snapshots_removed, "detail": run.detail}


def cmd_maintenance(args: argparse.Namespace, config: OperationsConfig, creds: Credentials) -> int:
    from infra.operations import maintenance

    if args.action == "list":
        latest = {(r.job, r.target): r for r in runs.latest(Path(config.runs_db))}
        _print({"jobs": [{**job.model_dump(), "latest_runs": [_run_dict(r) for (j, _), r in latest.items()
                                                              if j == job.action]}
                         for job in config.maintenance],
                "declared_tables": {ident: t.get("maintenance") for ident, t in config.declared().items()}})
        return 0
    older = maintenance.parse_duration(args.older_than) if args.older_than else None
    if older is not None and older < maintenance.DAY_S:
        print(f"warning: threshold {args.older_than} is under one day: files a writer is still writing may be "
              "deleted (meant for drills and probes)", file=sys.stderr)
    done = maintenance.run_job(config, creds, args.job, trigger="on-demand", table=args.table, older_than_s=older,
                               waiting=lambda message: print(message, file=sys.stderr))
    _print([_run_dict(r) for r in done])
    return 0 if all(r.status == "ok" for r in done) else 1


def cmd_recovery(args: argparse.Namespace, outputs: dict[str, Any], config: OperationsConfig,
                 creds: Credentials) -> int:
    from infra.operations import backup, procedures

    if config.backups is None:
        print("error: this stack takes no catalog backups (target aws: AWS Backup; or catalog-backup disabled)",
              file=sys.stderr)
        return 1
    if args.action == "backup":
        done = backup.backup_all(config, creds, trigger="on-demand")
        _print([_run_dict(r) for r in done])
        return 0 if all(r.status == "ok" for r in done) else 1
    if args.action == "list":
        listed = backup.verify_all(backup.list_backups(config.backups.dir))
        _print({"dir": config.backups.dir, "retention_days": config.backups.retention_days, "backups": listed})
        return 0 if all(b["verified"] for b in listed) else 1
    try:
        if args.action == "restore":
            report = procedures.restore(args.stack, outputs, config, creds, backup_file=args.backup,
                                        roll=not args.no_roll_forward)
        elif args.action == "rebuild":
            report = procedures.rebuild(args.stack, config, creds)
        else:
            if not args.database:
                print("error: restore-postgres needs --database", file=sys.stderr)
                return 2
            report = procedures.restore_postgres(config, creds, args.database, args.backup)
    except procedures.ProcedureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    _print(report)
    unreadable = [t for t, r in (report.get("tables") or {}).items() if "error" in r]
    return 1 if unreadable else 0


def cmd_tables(config: OperationsConfig, creds: Credentials) -> int:
    from infra.operations import tables
    from infra.operations.config import load_catalog

    catalog = load_catalog(config, creds)
    out = []
    for ident, declared in config.declared().items():
        try:
            now = tables.describe(catalog.load_table(ident))
        except Exception as exc:  # noqa: BLE001 - reported per table
            now = {"error": str(exc)[:300]}
        out.append({"table": ident, "owner": declared["owner"], "freshness_minutes": declared["freshness_minutes"],
                    "maintenance": declared.get("maintenance"), "now": now})
    _print(out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.operations", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stack", default="native", help="the deployed stack (reads its outputs)")
    parser.add_argument("--outputs", help="a stack outputs JSON file instead of --stack")
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("maintenance", help="run or list maintenance")
    m.add_argument("action", choices=("run", "list"))
    m.add_argument("job", nargs="?", help="a job id or an action (expire_snapshots, rewrite_data_files, ...)")
    m.add_argument("--table", help="only this table (namespace.name)")
    m.add_argument("--older-than", help="threshold instead of the job's older_than_days (e.g. 10s, 2h, 7d)")
    r = sub.add_parser("runs", help="the run record")
    r.add_argument("--job")
    r.add_argument("--limit", type=int, default=50)
    rec = sub.add_parser("recovery", help="catalog backups and the way back")
    rec.add_argument("action", choices=("backup", "list", "restore", "rebuild", "restore-postgres"))
    rec.add_argument("--backup", help="a backup file (default: the newest verified one)")
    rec.add_argument("--no-roll-forward", action="store_true", help="restore the backup's pointers only")
    rec.add_argument("--database", help="restore-postgres: the catalog database")
    sub.add_parser("tables", help="the declared tables, their owners, promises and current state")
    s = sub.add_parser("scheduler", help="run the scheduler service (what the platform starts)")
    s.add_argument("--config", required=True)
    s.add_argument("--role", choices=("maintenance", "backup"), required=True)
    s.add_argument("--listen", required=True, help="host:port of the health/jobs endpoint")
    args = parser.parse_args(argv)

    if args.command == "scheduler":
        from infra.operations import scheduler

        return scheduler.serve(OperationsConfig.load(args.config), Credentials.from_env(), args.role, args.listen)
    if args.command == "maintenance" and args.action == "run" and not args.job:
        parser.error("maintenance run needs a job (a job id or an action)")
    outputs = _outputs(args)
    try:
        config, creds = from_outputs(outputs)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    if args.command == "maintenance":
        return cmd_maintenance(args, config, creds)
    if args.command == "runs":
        _print([_run_dict(r) for r in runs.recent(Path(config.runs_db), job=args.job, limit=args.limit)])
        return 0
    if args.command == "recovery":
        return cmd_recovery(args, outputs, config, creds)
    return cmd_tables(config, creds)


if __name__ == "__main__":
    sys.exit(main())
