"""The operating layers on demand, against a deployed stack (its outputs): maintenance, the run record, backups and
the way back, the declared tables. Every command prints JSON and returns 1 when what it ran failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lakehouse_platform.runtime import runs
from lakehouse_platform.runtime.config import Credentials, OperationsConfig


def _print(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _run_dict(run: runs.Run) -> dict[str, Any]:
    return {"id": run.id, "job": run.job, "target": run.target, "trigger": run.trigger, "status": run.status,
            "started_at": run.started_at, "ended_at": run.ended_at, "files_removed": run.files_removed,
            "snapshots_removed": run.snapshots_removed, "detail": run.detail}


def cmd_maintenance(args: argparse.Namespace, config: OperationsConfig, creds: Credentials) -> int:
    from lakehouse_platform.runtime import maintenance

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
    from lakehouse_platform.control import procedures
    from lakehouse_platform.runtime import backup

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
    from lakehouse_platform.runtime import tables
    from lakehouse_platform.runtime.config import load_catalog

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


def cmd_runs(args: argparse.Namespace, config: OperationsConfig) -> int:
    _print([_run_dict(r) for r in runs.recent(Path(config.runs_db), job=args.job, limit=args.limit)])
    return 0
