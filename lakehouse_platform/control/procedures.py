"""The recovery procedures as one command each, on a deployed stack (``lakehouse recovery``).

``restore`` and ``rebuild`` (see ``recovery``) time every step, so the report is the drill's
evidence: the recovery time (loss handled to every table read back) and what the backup alone
would have lost (its age, the commits rolled forward from storage). The catalog is stopped and
started the way the target does it (``lakehouse_platform.control.services``): natively its process tree stopped by
the pid record, then ``pulumi up`` (which restarts exactly what is not running and waits for its health
check); in the lab ``docker stop`` and ``docker start`` of its container.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lakehouse_platform.control import services
from lakehouse_platform.runtime import backup as backups
from lakehouse_platform.runtime import recovery
from lakehouse_platform.runtime.config import Credentials, OperationsConfig, load_catalog, s3_client


class ProcedureError(RuntimeError):
    """A recovery procedure cannot run on this stack, or one of its steps failed."""


def _catalog_source(config: OperationsConfig) -> Any:
    plan = config.backups
    source = next((s for s in (plan.sqlite if plan else []) if s.name == config.catalog.service), None)
    if source is None:
        raise ProcedureError(f"the default catalog {config.catalog.service} keeps no SQLite file this command "
                             "restores; PostgreSQL catalogs: `recovery restore-postgres` (see README, Recovery)")
    return source


def tables_location(config: OperationsConfig) -> str:
    """Where the default catalog's tables are on storage, by name (its ``warehouse`` property may be a catalog name)."""
    if not config.catalog.tables_location:
        raise ProcedureError(f"{config.catalog.service} does not lay its tables out by name on storage: "
                             "nothing to rebuild from; restore its database instead (see README, Recovery)")
    return config.catalog.tables_location


def _control(outputs: Mapping[str, Any], stack: str | None = None) -> services.ServiceControl:
    try:
        return services.for_outputs(outputs, stack)
    except services.ServiceControlError as exc:
        raise ProcedureError(str(exc)) from None


def stop_service(outputs: Mapping[str, Any], service: str) -> float:
    """Stop a service the way its target does (native: its process tree by the pid record; the lab: ``docker
    stop``); nothing starts it again until it is started. Seconds taken."""
    try:
        return _control(outputs).stop(service)
    except services.ServiceControlError as exc:
        raise ProcedureError(str(exc)) from None


def _on_this_host(config: OperationsConfig) -> None:
    if config.target not in ("native", "docker"):
        raise ProcedureError(f"this command restores a catalog whose database file is on this host (native, docker); "
                             f"on {config.target} follow README, Recovery (aws: AWS Backup restore)")


def restore(stack: str, outputs: Mapping[str, Any], config: OperationsConfig, creds: Credentials, *,
            backup_file: str | None = None, roll: bool = True,
            start: Callable[[str], float] | None = None) -> dict[str, Any]:
    """Restore the default catalog from its newest verified backup (or ``backup_file``), roll forward, read back.

    The catalog is stopped and started again as its target does it (``lakehouse_platform.control.services``): natively
    by its
    pid record and ``pulumi up``; in the lab ``docker stop``/``docker start`` of its container, whose database is
    the file in the stack's bind-mounted state directory.
    """
    _on_this_host(config)
    assert config.backups is not None
    source = _catalog_source(config)
    began = time.perf_counter()
    if backup_file:
        chosen = backups.parse(Path(backup_file))
        if chosen is None:
            raise ProcedureError(f"{backup_file} is not a backup file of this platform (<database>-<time>.db)")
    else:
        chosen = backups.latest(config.backups.dir, source.name)
        if chosen is None:
            raise ProcedureError(f"no verified backup of {source.name} under {config.backups.dir}; "
                                 "rebuild from storage instead: lakehouse recovery rebuild")
    recorded = chosen.recorded_sha256()
    if recorded is None or not chosen.verify():
        raise ProcedureError(f"{chosen.path}: its sha256 sidecar is missing or does not match; choose another backup")
    steps: dict[str, float] = {}
    steps["stop_s"] = stop_service(outputs, source.name)
    t = time.perf_counter()
    recovery.place_sqlite_backup(chosen.path, Path(source.path), recorded)
    steps["place_s"] = time.perf_counter() - t
    restored_pointers: dict[str, str | None] = dict(recovery.pointers_in(Path(source.path)))  # the backup's own
    offline: list[dict[str, Any]] = []
    stored: dict[str, recovery.StoredTable] = {}
    if roll:  # the live writers' tables first, while the catalog is still stopped (``roll_forward_offline``)
        t = time.perf_counter()
        stored = recovery.tables_on_storage(s3_client(config, creds), tables_location(config))
        offline = recovery.roll_forward_offline(Path(source.path), stored)
        steps["roll_forward_offline_s"] = time.perf_counter() - t
    t = time.perf_counter()
    steps["start_s"] = start(stack) if start is not None else _start(outputs, stack, source.name)
    catalog = recovery.wait_for_catalog(lambda: load_catalog(config, creds, "restore"))
    steps["catalog_answers_s"] = time.perf_counter() - t
    t = time.perf_counter()
    actions: list[dict[str, Any]] = []
    if roll:
        # The same scan: what moved offline is current now, what the backup lacks is registered.
        actions = offline + recovery.roll_forward(catalog, stored)
    steps["roll_forward_s"] = time.perf_counter() - t
    t = time.perf_counter()
    tables = recovery.read_back(catalog, _safe_tables(catalog))
    steps["read_back_s"] = time.perf_counter() - t
    steps["total_s"] = time.perf_counter() - began
    return {
        "procedure": "restore", "stack": stack, "backup": chosen.describe(),
        "backup_age_s": round((datetime.now(UTC) - chosen.taken_at).total_seconds(), 1),
        "restored_pointers": restored_pointers, "roll_forward": actions,
        "rolled_forward": [a["table"] for a in actions if a["action"] != "current"],
        "tables": tables, "seconds": {k: round(v, 2) for k, v in steps.items()},
        "objectives": config.recovery.model_dump(),
    }


def rebuild(stack: str, config: OperationsConfig, creds: Credentials) -> dict[str, Any]:
    """No backup: register each table's newest metadata.json from storage into the (empty) catalog, read back.

    Only the catalog's API and the store are used, so it works on any target whose catalog this host reaches.
    """
    began = time.perf_counter()
    catalog = recovery.wait_for_catalog(lambda: load_catalog(config, creds, "rebuild"))
    t = time.perf_counter()
    stored = recovery.tables_on_storage(s3_client(config, creds), tables_location(config))
    scan_s = time.perf_counter() - t
    t = time.perf_counter()
    actions = recovery.roll_forward(catalog, stored)
    register_s = time.perf_counter() - t
    t = time.perf_counter()
    tables = recovery.read_back(catalog, _safe_tables(catalog))
    read_s = time.perf_counter() - t
    return {"procedure": "rebuild", "stack": stack, "found_on_storage": len(stored), "actions": actions,
            "tables": tables, "objectives": config.recovery.model_dump(),
            "seconds": {"scan_storage_s": round(scan_s, 2), "register_s": round(register_s, 2),
                        "read_back_s": round(read_s, 2), "total_s": round(time.perf_counter() - began, 2)}}


def restore_postgres(config: OperationsConfig, creds: Credentials, database: str,
                     backup_file: str | None = None) -> dict[str, Any]:
    """Replace one catalog database with its newest verified dump (stop that catalog first)."""
    import subprocess

    plan = config.backups
    if plan is None or plan.postgres is None or database not in plan.postgres.databases:
        known = ", ".join(plan.postgres.databases) if plan and plan.postgres else "none"
        raise ProcedureError(f"{database!r} is not a catalog database this stack backs up; known: {known}")
    chosen = backups.parse(Path(backup_file)) if backup_file else backups.latest(plan.dir, backups.PG_DUMPS, database)
    if chosen is None or not chosen.verify():
        raise ProcedureError(f"no verified dump of {database} (sha256 sidecar missing or wrong)")
    pg = plan.postgres
    env = backups.pg_env(creds)
    common = ["-h", pg.host, "-p", str(pg.port), "-U", pg.user, "--no-password"]
    began = time.perf_counter()
    steps = [
        [backups._pg_tool(pg, "dropdb"), *common, "--if-exists", "--force", database],
        [backups._pg_tool(pg, "createdb"), *common, database],
        [backups._pg_tool(pg, "pg_restore"), *common, "-d", database, "--no-owner", "--exit-on-error",
         str(chosen.path)],
    ]
    for argv in steps:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise ProcedureError(f"{Path(argv[0]).name} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
    return {"procedure": "restore-postgres", "database": database, "backup": chosen.describe(),
            "seconds": round(time.perf_counter() - began, 2)}


def _safe_tables(catalog: Any) -> list[str]:
    from lakehouse_platform.runtime.maintenance import catalog_tables

    return catalog_tables(catalog)


def _start(outputs: Mapping[str, Any], stack: str, service: str) -> float:
    """Start the catalog again as its target does (native: ``pulumi up``; the lab: ``docker start``, to healthy)."""
    try:
        return _control(outputs, stack).start(service)
    except services.ServiceControlError as exc:
        raise ProcedureError(str(exc)) from None
